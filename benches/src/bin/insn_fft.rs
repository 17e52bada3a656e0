//! Instruction-count workloads for the real-FFT kernels (and the log kernel the mel frontend
//! uses), next to the `realfft` crate (a real FFT on top of `rustfft`) on the same input.
//!
//! Run under qemu-aarch64 with the insn-count plugin and `--region`, e.g.
//! `count-insns.sh --region --quiet --cpu neoverse-n1 target/.../insn_fft rfft 512`: only
//! the measured calls (between the plugin's marker system calls) are counted; each workload
//! runs `REPS` = 10 transforms after one warm-up, and the count covers all 10.
//!
//! Usage: `insn_fft WORKLOAD N` with WORKLOAD one of `rfft`, `rfft-power` (ours, NEON on
//! aarch64), the same prefixed with `portable-`, `realfft` (peer: `realfft` 3, forward
//! real-to-complex, scratch preallocated), or `log10` (our log10 kernel over N values).

use neon_benches::{data, region_start, region_stop};
use neon_runtime::kernels::activation::Activation;
use neon_runtime::kernels::fft::{fill_twiddles, twiddle_len, RealFft};
use neon_runtime::{Backend, Portable};

#[cfg(target_arch = "aarch64")]
type Fast = neon_runtime::Neon;
#[cfg(not(target_arch = "aarch64"))]
type Fast = Portable;

/// Transforms per measured region.
const REPS: usize = 10;

fn run<B: Backend>(workload: &str, n: usize) -> f32 {
    let x = data(n, 1);
    let mut tw = vec![0.0; twiddle_len(n)];
    fill_twiddles(n, &mut tw);
    let fft = RealFft::new(n, &tw).expect("length");
    let mut spectrum = vec![0.0; n + 2];
    let mut power = vec![0.0; n / 2 + 1];
    match workload {
        "rfft" => {
            B::rfft(&fft, &x, &mut spectrum);
            region_start(1);
            for _ in 0..REPS {
                B::rfft(&fft, &x, &mut spectrum);
            }
            region_stop(1);
        }
        "rfft-power" => {
            B::rfft_power(&fft, &x, &mut spectrum, &mut power);
            region_start(1);
            for _ in 0..REPS {
                B::rfft_power(&fft, &x, &mut spectrum, &mut power);
            }
            region_stop(1);
            spectrum[..n / 2 + 1].copy_from_slice(&power);
        }
        "log10" => {
            let mut y = x.iter().map(|v| v.abs() + 1e-3).collect::<Vec<f32>>();
            let y0 = y.clone();
            region_start(1);
            for _ in 0..REPS {
                y.copy_from_slice(&y0);
                B::activate(Activation::Log10, &mut y);
            }
            region_stop(1);
            spectrum[..n].copy_from_slice(&y);
        }
        "realfft" => {
            let plan = realfft::RealFftPlanner::<f32>::new().plan_fft_forward(n);
            let mut input = x.clone();
            let mut out = plan.make_output_vec();
            let mut scratch = plan.make_scratch_vec();
            plan.process_with_scratch(&mut input, &mut out, &mut scratch).expect("realfft");
            region_start(1);
            for _ in 0..REPS {
                input.copy_from_slice(&x);
                plan.process_with_scratch(&mut input, &mut out, &mut scratch).expect("realfft");
            }
            region_stop(1);
            for (k, c) in out.iter().enumerate() {
                spectrum[k] = c.re;
                spectrum[n / 2 + 1 + k] = c.im;
            }
        }
        _ => {
            eprintln!("unknown workload {workload}");
            std::process::exit(2);
        }
    }
    spectrum.iter().sum()
}

fn main() {
    neon_benches::sized_main(
        "usage: insn_fft [portable-]rfft|rfft-power|log10 | realfft N",
        " ",
        |w, [n]| run::<Portable>(w, n),
        |w, [n]| run::<Fast>(w, n),
    );
}
