//! Turning a stream of scores into detections: a threshold crossing with a refractory period.

/// One detection: when the score first rose to the threshold, and that score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Detection {
    /// End of the audio that produced the score, in samples since the stream started.
    pub end_sample: u64,
    /// The score that crossed the threshold, in `(0, 1)`.
    pub score: f32,
}

/// Detects a score rising to `threshold` or above; after a detection, further crossings are
/// ignored for `refractory` samples, so one utterance (whose score stays high for several
/// chunks and may dip and rise again) gives one detection.
#[derive(Clone, Copy, Debug)]
pub struct Trigger {
    threshold: f32,
    refractory: u64,
    above: bool,
    quiet_until: u64,
}

impl Trigger {
    /// `threshold` in `(0, 1]` (openWakeWord's usual 0.5); `refractory` in samples
    /// (16,000 = 1 s at 16 kHz).
    pub const fn new(threshold: f32, refractory: u64) -> Self {
        Self { threshold, refractory, above: false, quiet_until: 0 }
    }

    /// The threshold.
    pub const fn threshold(&self) -> f32 {
        self.threshold
    }

    /// Feeds the score of the audio ending at `end_sample`; returns a detection when the
    /// score rises to the threshold outside a refractory period.
    pub fn update(&mut self, score: f32, end_sample: u64) -> Option<Detection> {
        let above = score >= self.threshold;
        let rising = above && !self.above;
        self.above = above;
        if rising && end_sample >= self.quiet_until {
            self.quiet_until = end_sample.saturating_add(self.refractory);
            return Some(Detection { end_sample, score });
        }
        None
    }

    /// Forgets past scores (as for a new stream).
    pub fn reset(&mut self) {
        self.above = false;
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
}
