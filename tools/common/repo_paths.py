"""Shared by the models' tool environments (`*_env.py`): the repository's paths.

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import os

# This file lives in tools/common/.
REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Downloaded sources (pip / npm packages) and their unpacked files; git-ignored.
CACHE_DIR = os.path.join(REPO_ROOT, "target", "py", "cache")


def models_dir(name):
    """The repository's models/<name>/ directory."""
    return os.path.join(REPO_ROOT, "models", name)
