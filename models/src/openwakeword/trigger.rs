//! Turning a stream of scores into detections: a threshold rule with a refractory period.
//!
//! Two rules are in use, and [`Rule`] names them:
//! - [`Rule::Rising`]: a score rising to the threshold or above fires (`neon wake`,
//!   `neon listen` and the C API: one detection per utterance, however long its score stays
//!   high);
//! - [`Rule::Counted`]: every score strictly above the threshold counts, and the
//!   `level`-th since the start fires (wyoming-openwakeword's `--trigger-level`; after the
//!   first detection one score above the threshold outside the refractory period fires).
//!
//! Either way, after a detection the model is silent for the refractory period, counted in
//! samples of audio (not wall time).

/// One detection: the end of the audio whose score fired, and that score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    /// End of the audio that produced the score, in samples since the stream started.
    pub end_sample: u64,
    /// The score that fired.
    pub score: f32,
}

/// Which scores fire (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A score at or above the threshold, after one below it, fires.
    Rising,
    /// Scores strictly above the threshold are counted; the `level`-th fires (`level` 0
    /// counts as 1).
    Counted {
        /// Scores above the threshold needed for the first detection.
        level: u32,
    },
}

/// Detects scores crossing `threshold` by a [`Rule`]; after a detection, further crossings
/// are ignored for `refractory` samples, so one utterance (whose score stays high for several
/// chunks and may dip and rise again) gives one detection.
#[derive(Clone, Copy, Debug)]
pub struct Trigger {
    threshold: f32,
    refractory: u64,
    rule: Rule,
    /// [`Rule::Rising`]: whether the last score was at or above the threshold.
    above: bool,
    /// [`Rule::Counted`]: scores above the threshold still needed (at most 0 once fired).
    left: i64,
    quiet_until: u64,
}

impl Trigger {
    /// A [`Rule::Rising`] trigger: `threshold` in `(0, 1]` (openWakeWord's usual 0.5);
    /// `refractory` in samples (16,000 = 1 s at 16 kHz).
    pub const fn new(threshold: f32, refractory: u64) -> Self {
        Self::with_rule(threshold, refractory, Rule::Rising)
    }

    /// A trigger with `rule`, `threshold` and `refractory` samples.
    pub const fn with_rule(threshold: f32, refractory: u64, rule: Rule) -> Self {
        let mut t = Self { threshold, refractory, rule, above: false, left: 0, quiet_until: 0 };
        t.left = t.level();
        t
    }

    const fn level(&self) -> i64 {
        match self.rule {
            Rule::Rising => 1,
            Rule::Counted { level: 0 } => 1,
            Rule::Counted { level } => level as i64,
        }
    }

    /// The threshold.
    pub const fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Feeds the score of the audio ending at `end_sample`; returns a detection when the
    /// score fires by the rule outside a refractory period. A NaN score never fires.
    pub fn update(&mut self, score: f32, end_sample: u64) -> Option<Detection> {
        let fires = match self.rule {
            Rule::Rising => {
                let above = score >= self.threshold;
                let rising = above && !self.above;
                self.above = above;
                rising && end_sample >= self.quiet_until
            }
            Rule::Counted { .. } => {
                // `score > threshold` is false for NaN: a NaN never counts.
                if end_sample < self.quiet_until
                    || score.partial_cmp(&self.threshold) != Some(core::cmp::Ordering::Greater)
                {
                    return None;
                }
                self.left -= 1;
                self.left <= 0
            }
        };
        if !fires {
            return None;
        }
        self.quiet_until = end_sample.saturating_add(self.refractory);
        Some(Detection { end_sample, score })
    }

    /// Forgets past scores (as for a new stream).
    pub fn reset(&mut self) {
        self.above = false;
        self.left = self.level();
        self.quiet_until = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::*;

    #[test]
    fn one_detection_per_utterance() {
        let mut t = Trigger::new(0.5, 16_000);
        let scores =
            [0.0, 0.2, 0.7, 0.9, 0.4, 0.8, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.6];
        let hits: Vec<_> = scores
            .iter()
            .enumerate()
            .filter_map(|(i, &s)| t.update(s, (i as u64 + 1) * 1280))
            .collect();
        // 0.7 at chunk 2 detects; the dip and rise at chunk 5 is inside 1 s; chunk 16 (17 *
        // 1280 = 21760 >= 3840 + 16000) is a new detection.
        assert_eq!(
            hits,
            [
                Detection { end_sample: 3840, score: 0.7 },
                Detection { end_sample: 21760, score: 0.6 }
            ]
        );
    }

    #[test]
    fn staying_above_is_one_detection_and_reset_forgets() {
        let mut t = Trigger::new(0.5, 0);
        assert!(t.update(0.9, 1).is_some());
        assert!(t.update(0.9, 2).is_none());
        t.reset();
        assert!(t.update(0.9, 3).is_some());
        assert!(t.update(0.49, 4).is_none());
        assert!(t.update(0.5, 5).is_some());
    }

    #[test]
    fn counted_needs_level_scores_strictly_above_then_one_per_refractory_period() {
        let mut t = Trigger::with_rule(0.5, 10, Rule::Counted { level: 3 });
        // 0.5 is not above; NaN never counts.
        let fired: Vec<_> = [(0.5, 1), (f32::NAN, 2), (0.6, 3), (0.1, 4), (0.7, 5), (0.8, 6)]
            .iter()
            .filter_map(|&(s, e)| t.update(s, e))
            .collect();
        assert_eq!(fired, [Detection { end_sample: 6, score: 0.8 }]);
        // Quiet until 16; then every score above fires again (the level is spent).
        assert!(t.update(0.9, 15).is_none());
        assert_eq!(t.update(0.9, 16), Some(Detection { end_sample: 16, score: 0.9 }));
        assert!(t.update(0.9, 20).is_none());
        assert!(t.update(0.9, 26).is_some());
        t.reset();
        assert!(t.update(0.9, 27).is_none() && t.update(0.9, 28).is_none());
        assert!(t.update(0.9, 29).is_some());
    }
}
