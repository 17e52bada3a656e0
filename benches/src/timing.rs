//! What the wall-clock benchmark binaries (`time_*`) share: process CPU time and the load
//! average they print in their header.

/// Process CPU time in seconds (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`).
#[inline]
pub fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant the C library
    // knows, and the call writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The 1-minute load average (the first field of `/proc/loadavg`), `?` where there is none.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split(' ').next().unwrap_or("?").to_string()
}
