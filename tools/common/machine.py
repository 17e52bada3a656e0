"""Shared by the benchmark peers: what the machine is, for their reports.

Import with `sys.path.insert(0, <this directory>)` (the tools are scripts, not a package).
"""
import platform


def cpu_name():
    """The CPU's model name from /proc/cpuinfo, else what `platform` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
