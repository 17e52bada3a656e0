//! Which backends a build can run. Run once with the default features (`std`: run-time CPU
//! detection) and once with `--no-default-features`, where an x86 level is usable only if
//! its target features are enabled at compile time: otherwise the plan returns
//! `Error::Backend` instead of running (or panicking).

use neon_kws_example::model::{Kws, KwsWorkspace};
use neon_kws_example::weights::{example_features, RawWeights};
use neon_runtime::{Backend, BackendKind, Error, Portable};

fn run<B: Backend>() -> Result<[f32; 12], Error> {
    let weights = RawWeights::example().prepare().expect("shapes match the plan");
    let x = example_features(40);
    let mut y = [0.0; 12];
    Kws::run::<B, _>(&weights, &x, &mut y, 40, &mut Box::new(KwsWorkspace::new()))?;
    Ok(y)
}

#[test]
fn portable_runs_everywhere() {
    let y = run::<Portable>().expect("the portable backend always runs");
    let sum: f32 = y.iter().sum();
    assert!((sum - 1.0).abs() < 1e-5, "softmax sums to {sum}");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn an_x86_level_this_build_cannot_run_is_an_error() {
    use neon_runtime::{Avx2, Avx512, X86Level, X86};
    let expect = |level: X86Level, result: Result<[f32; 12], Error>| match (
        BackendKind::X86(level).availability(),
        result,
    ) {
        (Ok(()), Ok(_)) => {}
        (Err(_), Err(Error::Backend(_))) => {}
        (a, r) => panic!("{level:?}: availability {a:?} but run gave {r:?}"),
    };
    expect(X86Level::Avx2, run::<X86<Avx2>>());
    expect(X86Level::Avx512, run::<X86<Avx512>>());
    // Without `std` there is no CPU detection: only compile-time target features count.
    if cfg!(not(feature = "std")) {
        let avx2 = cfg!(all(target_feature = "avx2", target_feature = "fma"));
        assert_eq!(BackendKind::X86(X86Level::Avx2).availability().is_ok(), avx2);
    }
}
