//! Liveness and in-place merging over a straight-line [`Schedule`].

use alloc::vec;
use alloc::vec::Vec;

use super::{Location, PlanError, Schedule, ValueId};

/// Live ranges of every value and the buffers that in-place chains share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Liveness {
    /// `(first, last)` live step of each value, inclusive.
    pub ranges: Vec<(usize, usize)>,
    /// For each value, the value whose buffer it uses (itself unless it is in place).
    pub buffer_of: Vec<ValueId>,
}

impl Liveness {
    /// Computes live ranges and merges in-place chains.
    ///
    /// A value written at step `s` and last read at step `t` is live on `[s, t]`; one never
    /// read (such as a step's scratch) is live on `[s, s]`. External values written by no step (plan inputs) are live
    /// from step 0. A step marked in place reuses its first input's buffer when that input
    /// is a workspace value, is not also another argument of the step, is read for the last
    /// time at this step, and is at least as large as the output.
    ///
    /// # Errors
    /// [`PlanError`] for unknown ids, reads of workspace values before their write, and
    /// values written twice.
    pub fn analyse(schedule: &Schedule) -> Result<Self, PlanError> {
        let n = schedule.values.len();
        let mut written: Vec<Option<usize>> = vec![None; n];
        let mut last_read: Vec<Option<usize>> = vec![None; n];
        for (s, step) in schedule.steps.iter().enumerate() {
            for &v in &step.inputs {
                if v >= n {
                    return Err(PlanError::UnknownValue { step: s, value: v });
                }
                if written[v].is_none() && schedule.values[v].location == Location::Workspace {
                    return Err(PlanError::ReadBeforeWrite { step: s, value: v });
                }
                last_read[v] = Some(s);
            }
            for &o in core::iter::once(&step.output).chain(&step.temps) {
                if o >= n {
                    return Err(PlanError::UnknownValue { step: s, value: o });
                }
                if written[o].is_some() {
                    return Err(PlanError::WrittenTwice { step: s, value: o });
                }
                written[o] = Some(s);
            }
        }
        let ranges: Vec<(usize, usize)> = (0..n)
            .map(|v| {
                let first = written[v].unwrap_or(0);
                (first, last_read[v].unwrap_or(first).max(first))
            })
            .collect();
        let mut buffer_of: Vec<ValueId> = (0..n).collect();
        for (s, step) in schedule.steps.iter().enumerate() {
            let Some(&src) = step.inputs.first() else { continue };
            let reusable = step.in_place
                && schedule.values[src].location == Location::Workspace
                && schedule.values[step.output].location == Location::Workspace
                && ranges[src].1 == s
                && step.inputs.iter().filter(|&&v| v == src).count() == 1
                && schedule.values[src].bytes >= schedule.values[step.output].bytes;
            if reusable {
                buffer_of[step.output] = buffer_of[src];
            }
        }
        Ok(Self { ranges, buffer_of })
    }

    /// The lifetime `(first, last)` of every buffer root (a value that is its own buffer),
    /// as the union of the ranges of the values sharing it; `None` for non-roots.
    pub fn buffer_ranges(&self) -> Vec<Option<(usize, usize)>> {
        let mut out: Vec<Option<(usize, usize)>> = vec![None; self.ranges.len()];
        for (v, &root) in self.buffer_of.iter().enumerate() {
            let (f, l) = self.ranges[v];
            out[root] = Some(match out[root] {
                None => (f, l),
                Some((f0, l0)) => (f0.min(f), l0.max(l)),
            });
        }
        out
    }
}
