//! Benchmarks of neon: criterion benches in `benches/benches/`, aarch64 instruction-count
//! bench binaries in `benches/src/bin/`. This library holds what they share: the region
//! markers of the insn-count plugin, deterministic input data, a WAV reader, process CPU time
//! and the load average for the `time_*` binaries ([`timing`]), the Moonshine set-up
//! ([`moonshine`]), the sanoTTS one ([`sanotts`]) and Silero VAD's ([`vad`]).

pub mod moonshine;
pub mod sanotts;
pub mod timing;
pub mod vad;

/// Starts counting region `id`: a system call the insn-count plugin watches (`svc #0` with
/// x8 = 0x5A5A0). The kernel answers ENOSYS, so it is harmless outside the counter. A no-op
/// off aarch64.
#[inline(always)]
pub fn region_start(id: u64) {
    marker::<0x5A5A0>(id);
}

/// Stops counting region `id` (x8 = 0x5A5A1).
#[inline(always)]
pub fn region_stop(id: u64) {
    marker::<0x5A5A1>(id);
}

/// Runs the criterion benchmark `$body::<B>(&mut Criterion)` with the backend the `neon`
/// program picks, `BackendKind::best()` (chosen once for the whole benchmark).
#[macro_export]
macro_rules! bench_on_best_backend {
    ($body:ident, $criterion:expr) => {{
        struct Body<'a>(&'a mut criterion::Criterion);
        impl neon_runtime::WithBackend for Body<'_> {
            type Output = ();
            fn run<B: neon_runtime::Backend>(self) {
                $body::<B>(self.0)
            }
        }
        neon_runtime::BackendKind::best().with(Body($criterion)).unwrap()
    }};
}

/// The plugin's marker: system call `NR` with `id` in x0.
#[inline(always)]
fn marker<const NR: u64>(id: u64) {
    #[cfg(target_arch = "aarch64")]
    // SAFETY: an unassigned system call number: the kernel (or qemu) only returns ENOSYS
    // in x0, which is declared clobbered.
    unsafe {
        core::arch::asm!("svc #0", in("x8") NR, inout("x0") id => _, options(nostack));
    }
    #[cfg(not(target_arch = "aarch64"))]
    let _ = id;
}

/// The `main` of an instruction-count binary whose arguments are one workload name and an
/// optional `portable`: runs the workload with `portable` or `fast` (the binary's `run`
/// monomorphised for `Portable` and for its default backend), prints its checksum (which
/// keeps the computation observable), or prints `usage` and exits with status 2 when `run`
/// does not know the workload.
pub fn workload_main(
    usage: &str,
    portable: fn(&str) -> Option<f32>,
    fast: fn(&str) -> Option<f32>,
) {
    let workload = std::env::args().nth(1).unwrap_or_default();
    let run = if std::env::args().nth(2).as_deref() == Some("portable") { portable } else { fast };
    let Some(checksum) = run(&workload) else {
        eprintln!("usage: {usage}");
        std::process::exit(2);
    };
    println!("{workload}: checksum {checksum}");
}

/// The `main` of an instruction-count binary whose arguments are a workload name, optionally
/// prefixed `portable-`, and `N` sizes: runs `portable(workload, sizes)` (the binary's `run`
/// for `Portable`, the prefix removed) or `fast(workload, sizes)` (for its default backend)
/// and prints `WORKLOAD SIZES: checksum C` (the sizes joined by `sep`; the checksum keeps the
/// computation observable). With another number of arguments it prints `usage` and exits
/// with status 2.
///
/// # Panics
/// With `usage` as the message when a size is not a whole number.
pub fn sized_main<const N: usize>(
    usage: &str,
    sep: &str,
    portable: fn(&str, [usize; N]) -> f32,
    fast: fn(&str, [usize; N]) -> f32,
) {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != N + 2 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let sizes: [usize; N] = std::array::from_fn(|i| args[i + 2].parse().expect(usage));
    let workload = args[1].as_str();
    let checksum = match workload.strip_prefix("portable-") {
        Some(w) => portable(w, sizes),
        None => fast(workload, sizes),
    };
    let sizes = sizes.map(|s| s.to_string()).join(sep);
    println!("{workload} {sizes}: checksum {checksum}");
}

/// The `main` of an instruction-count binary named `name` whose arguments are a workload
/// (read by `parse`) and an optional last `portable`: runs `portable` or `fast` (the binary's
/// `run` for `Portable` and for its default backend) on the workload and prints
/// `checksum C`; prints `usage` when `parse` does not know the arguments, `name: ERROR` when
/// the run fails, and exits with status 2 after either.
pub fn parsed_main<W>(
    name: &str,
    usage: &str,
    parse: fn(&[String]) -> Option<W>,
    portable: fn(&W) -> Result<f32, String>,
    fast: fn(&W) -> Result<f32, String>,
) {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let on_portable = args.last().is_some_and(|a| a == "portable");
    if on_portable {
        args.pop();
    }
    let Some(workload) = parse(&args) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let result = if on_portable { portable(&workload) } else { fast(&workload) };
    match result {
        Ok(checksum) => println!("checksum {checksum}"),
        Err(e) => {
            eprintln!("{name}: {e}");
            std::process::exit(2);
        }
    }
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

/// The samples of a 16 kHz mono 16-bit PCM WAV file (the format of the committed clips and
/// of Moonshine's `beckett.wav`).
///
/// # Panics
/// If the bytes are not such a file.
pub fn wav_i16(bytes: &[u8]) -> Vec<i16> {
    assert!(&bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE", "not a WAV file");
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let mut pos = 12;
    let mut format_ok = false;
    while pos + 8 <= bytes.len() {
        let (id, len) = (&bytes[pos..pos + 4], u32_at(pos + 4) as usize);
        let body = pos + 8;
        match id {
            b"fmt " => {
                // PCM, 1 channel, 16 kHz, 16 bits.
                format_ok = u16_at(body) == 1
                    && u16_at(body + 2) == 1
                    && u32_at(body + 4) == 16_000
                    && u16_at(body + 14) == 16;
            }
            b"data" => {
                assert!(format_ok, "expected 16 kHz mono 16-bit PCM");
                let data = &bytes[body..(body + len).min(bytes.len())];
                return data.chunks_exact(2).map(|b| i16::from_le_bytes([b[0], b[1]])).collect();
            }
            _ => {}
        }
        pos = body + len + (len & 1);
    }
    panic!("no data chunk");
}

/// A zero-initialised `[f32]` of `len` values that starts on a 64-byte boundary (a cache
/// line, one AVX-512 vector), so a benchmark's timing does not depend on where the heap
/// happens to place its buffers (an unaligned vector load or store splits two lines).
pub struct Aligned {
    buf: Vec<f32>,
    off: usize,
    len: usize,
}

impl Aligned {
    /// `len` zeros, 64-byte aligned.
    pub fn zeros(len: usize) -> Self {
        let buf = vec![0.0; len + 16];
        let off = buf.as_ptr().align_offset(64);
        Aligned { buf, off, len }
    }

    /// A 64-byte aligned copy of `values`.
    pub fn from_slice(values: &[f32]) -> Self {
        let mut a = Self::zeros(values.len());
        a.copy_from_slice(values);
        a
    }
}

impl std::ops::Deref for Aligned {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        &self.buf[self.off..self.off + self.len]
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [f32] {
        &mut self.buf[self.off..self.off + self.len]
    }
}
