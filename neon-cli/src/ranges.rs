//! The range checks of the commands' numeric flags, with one error message format:
//! "`--flag` must be in RANGE, got VALUE".

use std::fmt::Display;

/// The interval a flag's value must lie in, as its error message writes it.
#[derive(Clone, Copy)]
pub(crate) enum Interval<T> {
    /// `[lo, hi]`.
    Closed(T, T),
    /// `(lo, hi]`.
    OpenClosed(T, T),
    /// `lo..=hi` (whole numbers).
    Inclusive(T, T),
}

/// `Ok` when `value` lies in `interval` (NaN lies in none), else the error
/// "`flag` must be in INTERVAL, got VALUE".
pub(crate) fn check_in<T: PartialOrd + Display + Copy>(
    flag: &str,
    value: T,
    interval: Interval<T>,
) -> Result<(), String> {
    let (inside, range) = match interval {
        Interval::Closed(lo, hi) => (lo <= value && value <= hi, format!("[{lo}, {hi}]")),
        Interval::OpenClosed(lo, hi) => (lo < value && value <= hi, format!("({lo}, {hi}]")),
        Interval::Inclusive(lo, hi) => (lo <= value && value <= hi, format!("{lo}..={hi}")),
    };
    if inside {
        Ok(())
    } else {
        Err(format!("{flag} must be in {range}, got {value}"))
    }
}

#[cfg(test)]
mod tests {
    use super::{check_in, Interval};

    #[test]
    fn messages_and_bounds() {
        assert_eq!(check_in("--t", 1.0f32, Interval::OpenClosed(0.0, 1.0)), Ok(()));
        assert_eq!(
            check_in("--t", 0.0f32, Interval::OpenClosed(0.0, 1.0)),
            Err("--t must be in (0, 1], got 0".into())
        );
        assert_eq!(
            check_in("--t", f32::NAN, Interval::Closed(-100.0, 0.0)),
            Err("--t must be in [-100, 0], got NaN".into())
        );
        assert_eq!(check_in("--s", 0.0f32, Interval::Closed(0.0, 60.0)), Ok(()));
        assert_eq!(
            check_in("--n", 17usize, Interval::Inclusive(1, 16)),
            Err("--n must be in 1..=16, got 17".into())
        );
        assert_eq!(check_in("--n", 100u32, Interval::Inclusive(100, 10_000)), Ok(()));
    }
}
