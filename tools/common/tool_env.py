"""The helpers every converter's environment module re-exports (tools/moonshine/ms_env.py,
tools/silero_vad/sv_env.py): repository paths, the safetensors reader and writer, the pinned
wheel fetcher, the regenerate-and-compare check and the WAV reader. A tool's env module does
`from tool_env import *` after putting tools/common on sys.path, so its scripts can name
these as `<env>.read_safetensors` and so on.
"""
from fetch_pinned import pinned_wheel
from regen_check import check_regenerated, same_bytes_as_in
from repo_paths import CACHE_DIR, REPO_ROOT, models_dir
from safetensors_io import (
    read_safetensors,
    read_safetensors_metadata,
    sha256_file,
    write_safetensors,
)
from wav_io import read_pcm16_mono

__all__ = [
    "CACHE_DIR",
    "REPO_ROOT",
    "check_regenerated",
    "models_dir",
    "pinned_wheel",
    "read_pcm16_mono",
    "read_safetensors",
    "read_safetensors_metadata",
    "same_bytes_as_in",
    "sha256_file",
    "write_safetensors",
]
