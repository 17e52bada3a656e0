"""Runs cross-built aarch64 test executables under qemu-aarch64, several at once.

  cargo test --no-run --message-format=json-render-diagnostics --target aarch64-unknown-linux-gnu ... > tests.json
  python3 scripts/qemu_tests.py [--jobs N] [--package NAME ...] [--exe TARGET[:FILTER] ...] \
    < tests.json

Reads cargo's JSON messages, takes every test executable (of the named packages, or all; with
--exe only the named test targets, each with the test-name filter after its colon if any; a
named target missing from the build fails), and runs each as `cargo test` would (working
directory = its package's root, stdin closed) under `qemu-aarch64 -L /usr/aarch64-linux-gnu`,
N executables at a time (default 2). Host executables, such as a proc-macro crate's unit
tests, are skipped: the host test step runs them. QEMU_CPU in the environment picks the
emulated core. `cargo test` runs executables one after another, and most of ours hold one
or two long tests: under qemu that leaves a core idle most of the time. Each executable's
output is printed whole when it ends. An executable that runs longer than --timeout seconds
(default 900) is killed and counts as failed, so a hang is reported as one instead of
running into CI's time limit. Exits 1 if an executable fails or if no test passed in all.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

PASSED = re.compile(r"^test result: ok\. (\d+) passed", re.M)


def executables(stream, packages):
    """(package name, path, package root) of every test executable in cargo's messages."""
    found = []
    for line in stream:
        if not line.startswith("{"):
            continue
        m = json.loads(line)
        if m.get("reason") != "compiler-artifact" or not m.get("executable"):
            continue
        if not m["profile"]["test"]:
            continue
        root = os.path.dirname(m["manifest_path"])
        name = m["target"]["name"]
        # "path+file:///DIR#NAME@VERSION", or "path+file:///DIR#VERSION" when NAME is DIR's.
        url, fragment = m["package_id"].rsplit("#", 1)
        package = fragment.split("@")[0] if "@" in fragment else url.rsplit("/", 1)[-1]
        if packages and package not in packages:
            continue
        found.append((f"{package} {name}", m["executable"], root))
    return found


def is_aarch64(exe):
    """Whether `exe` is an aarch64 ELF file (e_machine 183). A proc-macro crate's unit tests
    are built for the host even in a cross build; the host test step runs them."""
    with open(exe, "rb") as f:
        header = f.read(20)
    return header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183


def run(exe, root, timeout, args):
    """(exit code, output, seconds) of `exe args`; an executable still running after `timeout`
    seconds is killed and reported as failed (exit code -1) with the output it had printed."""
    start = time.monotonic()
    try:
        p = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", exe, *args], cwd=root,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace",
                           timeout=timeout)
        return p.returncode, p.stdout, time.monotonic() - start
    except subprocess.TimeoutExpired as e:
        out = e.stdout or b""
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        return -1, out + f"\nkilled: still running after {timeout} s\n", time.monotonic() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900,
                   help="seconds an executable may run before it is killed as hung (default 900)")
    p.add_argument("--package", action="append", default=[],
                   help="only this package's executables (repeatable)")
    p.add_argument("--exe", action="append", default=[], metavar="TARGET[:FILTER]",
                   help="only this test target, with FILTER its test harness's name filter "
                        "(repeatable; fails if the target is not in cargo's output)")
    a = p.parse_args()
    only = dict(e.split(":", 1) if ":" in e else (e, None) for e in a.exe)
    # The model crates' executables hold the longest tests: start them first.
    order = {"neon-models": 0, "neon-cli": 0, "neon-capi": 1, "neon-tests": 2}
    tests = []
    for label, exe, root in executables(sys.stdin, set(a.package)):
        target = label.split()[1]
        if only and target not in only:
            continue
        if is_aarch64(exe):
            args = [only[target]] if only.get(target) else []
            tests.append((label, exe, root, args))
        else:
            print(f"skipped {label}: a host executable (run by the host tests)")
    tests.sort(key=lambda t: order.get(t[0].split()[0], 3))
    missing = set(only) - {label.split()[1] for label, *_ in tests}
    if missing:
        sys.exit(f"qemu_tests.py: --exe {', '.join(sorted(missing))}: not in cargo's output")
    if not tests:
        sys.exit("qemu_tests.py: no test executable in cargo's output")
    cpu = os.environ.get("QEMU_CPU", "max")
    passed, failed = 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(run, exe, root, a.timeout, args): " ".join([label, *args])
                   for label, exe, root, args in tests}
        for f in concurrent.futures.as_completed(futures):
            label = futures[f]
            rc, out, secs = f.result()
            print(f"\n--- {label} (QEMU_CPU={cpu}, {secs:.1f} s, exit {rc})", flush=True)
            print(out, end="", flush=True)
            passed += sum(int(n) for n in PASSED.findall(out))
            if rc != 0:
                failed.append(label)
    if failed:
        sys.exit(f"aarch64: failed under qemu-aarch64 (QEMU_CPU={cpu}): {', '.join(failed)}")
    if passed == 0:
        sys.exit("aarch64 suite executed no test: failing")
    print(f"aarch64: {passed} tests passed in {len(tests)} executables under qemu-aarch64 "
          f"(QEMU_CPU={cpu})")


if __name__ == "__main__":
    main()
