//! Benchmarks of neon: criterion benches in `benches/benches/`, aarch64 instruction-count
//! bench binaries in `benches/src/bin/`. This library holds what they share: the region
//! markers of the insn-count plugin and deterministic input data.

/// Starts counting region `id`: a system call the insn-count plugin watches (`svc #0` with
/// x8 = 0x5A5A0). The kernel answers ENOSYS, so it is harmless outside the counter. A no-op
/// off aarch64.
#[inline(always)]
pub fn region_start(id: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: an unassigned system call number: the kernel (or qemu) only returns ENOSYS
    // in x0, which is declared clobbered.
    unsafe {
        core::arch::asm!("svc #0", in("x8") 0x5A5A0u64, inout("x0") id => _, options(nostack));
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = id;
}

/// Stops counting region `id` (x8 = 0x5A5A1).
#[inline(always)]
pub fn region_stop(id: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as in `region_start`.
    unsafe {
        core::arch::asm!("svc #0", in("x8") 0x5A5A1u64, inout("x0") id => _, options(nostack));
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = id;
}

/// `n` deterministic values in [-1, 1) (a small LCG: no dependency, same data every run).
pub fn data(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}
