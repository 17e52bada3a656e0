"""Shared by the tools' environment modules (tools/moonshine/ms_env.py,
tools/openwakeword/oww_env.py, tools/silero_vad/sv_env.py): the repository's layout and the
shared helpers each of them offers its scripts (`ms_env.read_safetensors`, ...).

An environment module puts this directory on `sys.path` and takes everything of `__all__` with
`from tool_env import *` (the tools are scripts, not a package).
"""
import os

from regen_check import check_regenerated, same_bytes_as_in
from safetensors_io import (
    read_safetensors,
    read_safetensors_metadata,
    sha256_file,
    write_safetensors,
)

# Repository layout (this file lives in tools/common/).
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Downloaded sources (wheels, npm packages), unpacked beside them: build output, ignored by git.
CACHE_DIR = os.path.join(REPO_ROOT, "target", "py", "cache")

__all__ = [
    "REPO_ROOT",
    "CACHE_DIR",
    "check_regenerated",
    "same_bytes_as_in",
    "read_safetensors",
    "read_safetensors_metadata",
    "sha256_file",
    "write_safetensors",
]
