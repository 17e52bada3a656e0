"""Shared by the converters' and golden scripts' `--check`: regenerate every output into a
temporary directory and compare it with the file in place, one line per file and a summary.

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import argparse
import os
import shutil
import sys
import tempfile

from safetensors_io import sha256_file


def check_regenerated(prefix, regenerate, compare, summary="identical"):
    """Returns the exit status of a check: 0 when every regenerated output matches, else 1.

    `regenerate(tmp)` writes the outputs into the temporary directory `tmp` (removed at the end,
    its name starts with `prefix`) and returns what it wrote. `compare(tmp, item)` compares one
    of them with the file in place and returns `(name, ok, detail)`: `ok` is None when the file
    in place is missing; `detail` is printed after the name. `summary` (a string, or a function
    called at the end) follows the count of matching outputs in the last line.
    """
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        written = regenerate(tmp)
        bad = 0
        for item in written:
            name, ok, detail = compare(tmp, item)
            if ok is None:
                print(f"MISSING {name}")
            else:
                print(f"{'ok  ' if ok else 'DIFF'} {name}{detail}")
            bad += not ok
        text = summary() if callable(summary) else summary
        print(f"check: {len(written) - bad} {text}, {bad} different")
        return 1 if bad else 0
    finally:
        shutil.rmtree(tmp)


def same_bytes_as_in(out_dir):
    """A `compare` for `check_regenerated` whose `regenerate` returns file paths: each file
    must equal the one of the same name in `out_dir` byte for byte."""
    def compare(_tmp, path):
        name = os.path.basename(path)
        mine = os.path.join(out_dir, name)
        if not os.path.exists(mine):
            return name, None, ""
        return name, sha256_file(path) == sha256_file(mine), ""
    return compare


def regen_parser(doc, out_dir, regenerates, if_needed_help, out_help="output directory"):
    """The command line of a script that writes its outputs into `OUT_DIR` (default `out_dir`):
    `--check` (`regenerates`, e.g. "convert", into a temporary directory and compare with
    OUT_DIR) and `--if-needed` (help `if_needed_help`). The description is the first paragraph
    of `doc`. Returns the parser: a script adds its own options to it."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("out_dir", nargs="?", default=out_dir, help=out_help)
    ap.add_argument("--check", action="store_true",
                    help=f"{regenerates} into a temporary directory and compare with OUT_DIR")
    ap.add_argument("--if-needed", action="store_true", help=if_needed_help)
    return ap


def regen_arguments(ap, check):
    """Parses the command line of `ap` (a `regen_parser`); with `--check`, exits with the status
    of `check(OUT_DIR)`."""
    args = ap.parse_args()
    if args.check:
        sys.exit(check(args.out_dir))
    return args


def same_bytes_check(prefix, regenerate):
    """A `check(out_dir)` for `regen_arguments`: `check_regenerated` of `regenerate(tmp)` (which
    returns the paths it wrote) against `same_bytes_as_in(out_dir)`."""
    return lambda out_dir: check_regenerated(prefix, regenerate, same_bytes_as_in(out_dir))


def check_only_arguments(doc, check):
    """The command line of a script that writes into one fixed directory: only `--check`
    (regenerate into a temporary directory and compare), with which it exits with the status of
    `check()`. The description is the first paragraph of `doc`. Returns the parsed arguments."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare")
    args = ap.parse_args()
    if args.check:
        sys.exit(check())
    return args


def check_or_write(doc, check, write, root):
    """The `main` of a script that writes into one fixed directory: with `--check`
    (`check_only_arguments`) exits with the status of `check()`; otherwise calls `write()` and
    prints `wrote <path> (<size> bytes)` for every path it returns, relative to `root`."""
    check_only_arguments(doc, check)
    for path in write():
        print(f"wrote {os.path.relpath(path, root)} ({os.path.getsize(path)} bytes)")
