"""Runs built test executables several at once: cross-built aarch64 ones under qemu-aarch64,
or with --host the host's own.

  cargo test --no-run --message-format=json-render-diagnostics --target aarch64-unknown-linux-gnu ... > tests.json
  python3 scripts/qemu_tests.py [--host] [--jobs N] [--package NAME ...] \
    [--exe TARGET[:FILTER] ...] [--ignored] < tests.json

Reads cargo's JSON messages (several builds' messages may be concatenated: an executable
listed twice runs once), takes every test executable (of the named packages, or all; with
--exe only the named test targets, each with the test-name filter after its colon if any; a
named target missing from the build fails), and runs each as `cargo test` would (working
directory = its package's root, stdin closed, CARGO_MANIFEST_DIR and CARGO_PKG_NAME set),
N executables at a time (default 2). Without --host they run under `qemu-aarch64 -L
/usr/aarch64-linux-gnu` (QEMU_CPU in the environment picks the emulated core), and host
executables, such as a proc-macro crate's unit tests, are skipped: the host test step runs
them. With --host every executable runs natively. `cargo test` runs executables one after
another, and many of ours hold one or two long tests: that leaves a core idle most of the
time (doc tests are not executables: `cargo test --doc` runs them). Each executable's
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
    """(package name, path, package root) of every test executable in cargo's messages, each
    once."""
    found, seen = [], set()
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
        if packages and package not in packages or m["executable"] in seen:
            continue
        seen.add(m["executable"])
        found.append((f"{package} {name}", m["executable"], root))
    return found


def is_aarch64(exe):
    """Whether `exe` is an aarch64 ELF file (e_machine 183). A proc-macro crate's unit tests
    are built for the host even in a cross build; the host test step runs them."""
    with open(exe, "rb") as f:
        header = f.read(20)
    return header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == 183


def host_library_path(exe):
    """LD_LIBRARY_PATH as `cargo test` gives a host executable: its own directory and the
    toolchain's library directory first (a proc-macro crate's unit tests link the
    toolchain's shared libstd), then the caller's."""
    libdir = subprocess.run(["rustc", "--print", "target-libdir"], check=True,
                            capture_output=True, text=True).stdout.strip()
    dirs = [os.path.dirname(exe), libdir]
    return os.pathsep.join(dirs + [p for p in [os.environ.get("LD_LIBRARY_PATH")] if p])


def run(command, root, package, timeout, host):
    """(exit code, output, seconds) of `command` in `root` with cargo's run-time variables
    of `package` (and, on the host, its library path); an executable still running after
    `timeout` seconds is killed and reported as failed (exit code -1) with the output it
    had printed."""
    env = dict(os.environ, CARGO_MANIFEST_DIR=root, CARGO_PKG_NAME=package)
    if host:
        env["LD_LIBRARY_PATH"] = host_library_path(command[0])
    start = time.monotonic()
    try:
        p = subprocess.run(command, cwd=root, env=env,
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
    p.add_argument("--host", action="store_true",
                   help="run the host's test executables natively instead of aarch64 ones "
                        "under qemu-aarch64")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=900,
                   help="seconds an executable may run before it is killed as hung (default 900)")
    p.add_argument("--package", action="append", default=[],
                   help="only this package's executables (repeatable)")
    p.add_argument("--exe", action="append", default=[], metavar="TARGET[:FILTER]",
                   help="only this test target, with FILTER its test harness's name filter "
                        "(repeatable; fails if the target is not in cargo's output)")
    p.add_argument("--ignored", action="store_true",
                   help="pass --ignored to every executable: run only its #[ignore] tests "
                        "(long ones, such as the serve soak test)")
    a = p.parse_args()
    only = dict(e.split(":", 1) if ":" in e else (e, None) for e in a.exe)
    # The model crates' executables hold the longest tests: start them first. On the host
    # the longest is the compile-fail suite (tests/tests/ui.rs, ~85 s: trybuild's own cargo
    # build), before them.
    order = {"neon-models": 0, "neon-cli": 0, "neon-capi": 1, "neon-tests": 2}
    first = {"neon-tests ui"} if a.host else set()
    tests = []
    for label, exe, root in executables(sys.stdin, set(a.package)):
        target = label.split()[1]
        if only and target not in only:
            continue
        args = [only[target]] if only.get(target) else []
        if a.ignored:
            args.append("--ignored")
        if a.host:
            tests.append((label, [exe, *args], root, args))
        elif is_aarch64(exe):
            qemu = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", exe, *args]
            tests.append((label, qemu, root, args))
        else:
            print(f"skipped {label}: a host executable (run by the host tests)")
    tests.sort(key=lambda t: -1 if t[0] in first else order.get(t[0].split()[0], 3))
    missing = set(only) - {label.split()[1] for label, *_ in tests}
    if missing:
        sys.exit(f"qemu_tests.py: --exe {', '.join(sorted(missing))}: not in cargo's output")
    if not tests:
        sys.exit("qemu_tests.py: no test executable in cargo's output")
    where = "host" if a.host else f"QEMU_CPU={os.environ.get('QEMU_CPU', 'max')}"
    # "aarch64: ... under qemu-aarch64 (QEMU_CPU=max)" or "host: ...".
    suite, on = ("host", "") if a.host else ("aarch64", f" under qemu-aarch64 ({where})")
    passed, failed = 0, []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(run, command, root, label.split()[0], a.timeout, a.host):
                   " ".join([label, *args]) for label, command, root, args in tests}
        for f in concurrent.futures.as_completed(futures):
            label = futures[f]
            rc, out, secs = f.result()
            print(f"\n--- {label} ({where}, {secs:.1f} s, exit {rc})", flush=True)
            print(out, end="", flush=True)
            passed += sum(int(n) for n in PASSED.findall(out))
            if rc != 0:
                failed.append(label)
    if failed:
        sys.exit(f"{suite}: failed{on}: {', '.join(failed)}")
    if passed == 0:
        sys.exit(f"{suite} suite executed no test: failing")
    print(f"{suite}: {passed} tests passed in {len(tests)} executables{on}")


if __name__ == "__main__":
    main()
