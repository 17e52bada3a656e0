//! End of an utterance by energy: after a wake word, the speech that follows ends at the
//! first pause, or at a maximum length (`neon listen`). Feature `std` (for `log10`); no
//! allocation.
//!
//! The audio is cut in frames (any length; `neon listen` uses the wake-word chunks of 80 ms,
//! 1280 samples at 16 kHz). A frame is *speech* when its RMS level is at or above
//! [`EndpointConfig::speech_dbfs`] (dB relative to full scale: an int16 RMS of 32768 is
//! 0 dBFS). The utterance ends:
//! - at a **pause**: [`EndpointConfig::pause_ms`] of consecutive non-speech frames after at
//!   least one speech frame;
//! - with **no speech**: [`EndpointConfig::no_speech_ms`] without any speech frame;
//! - at the **maximum length** [`EndpointConfig::max_ms`].
//!
//! Default thresholds (our choice, adjustable): speech at -45 dBFS and above (a voice at
//! arm's length on a USB or array microphone at usual gain measures about -35 to -20 dBFS
//! RMS, a quiet room below -55); a pause of 700 ms (longer than the gaps between words of
//! fluent speech, about 100-300 ms); 4 s for speech to begin; 15 s at most (Moonshine takes
//! up to 30 s per segment). An energy threshold cannot tell speech from other loud sounds:
//! in steady noise above the threshold the utterance runs to its maximum length.

/// The thresholds of an [`Endpointer`] (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EndpointConfig {
    /// RMS level (dBFS) at or above which a frame is speech.
    pub speech_dbfs: f32,
    /// Silence (ms) after speech that ends the utterance.
    pub pause_ms: u32,
    /// Time (ms) without any speech after which the utterance ends empty.
    pub no_speech_ms: u32,
    /// Maximum length of an utterance (ms).
    pub max_ms: u32,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self { speech_dbfs: -45.0, pause_ms: 700, no_speech_ms: 4000, max_ms: 15_000 }
    }
}

/// Why an utterance ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// A pause of [`EndpointConfig::pause_ms`] after speech.
    Pause,
    /// No speech within [`EndpointConfig::no_speech_ms`].
    NoSpeech,
    /// [`EndpointConfig::max_ms`] reached.
    MaxLength,
}

impl EndReason {
    /// `"pause"`, `"no_speech"`, `"max_length"`.
    pub const fn name(self) -> &'static str {
        match self {
            EndReason::Pause => "pause",
            EndReason::NoSpeech => "no_speech",
            EndReason::MaxLength => "max_length",
        }
    }
}

/// Tracks one utterance frame by frame (module docs).
#[derive(Clone, Debug)]
pub struct Endpointer {
    config: EndpointConfig,
    /// Samples seen since the start.
    samples: u64,
    /// Samples up to the end of the last speech frame (0: none yet).
    speech_end: u64,
    heard: bool,
}

/// Samples in `ms` milliseconds at 16 kHz.
const fn samples(ms: u32) -> u64 {
    ms as u64 * 16
}

impl Endpointer {
    /// An utterance starting now.
    pub const fn new(config: EndpointConfig) -> Self {
        Self { config, samples: 0, speech_end: 0, heard: false }
    }

    /// Starts a new utterance.
    pub fn reset(&mut self) {
        *self = Self::new(self.config);
    }

    /// The RMS level of `frame` (int16 samples) in dBFS; `-inf` for silence or no samples.
    pub fn level_dbfs(frame: &[i16]) -> f32 {
        if frame.is_empty() {
            return f32::NEG_INFINITY;
        }
        let energy: f64 = frame.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
        let mean = energy / frame.len() as f64 / (32768.0 * 32768.0);
        if mean == 0.0 {
            f32::NEG_INFINITY
        } else {
            (10.0 * mean.log10()) as f32
        }
    }

    /// Feeds the next frame (16 kHz mono int16); `Some(reason)` when the utterance has
    /// ended with it.
    pub fn push(&mut self, frame: &[i16]) -> Option<EndReason> {
        self.samples += frame.len() as u64;
        if Self::level_dbfs(frame) >= self.config.speech_dbfs {
            self.heard = true;
            self.speech_end = self.samples;
        }
        if self.samples >= samples(self.config.max_ms) {
            Some(EndReason::MaxLength)
        } else if self.heard && self.samples - self.speech_end >= samples(self.config.pause_ms) {
            Some(EndReason::Pause)
        } else if !self.heard && self.samples >= samples(self.config.no_speech_ms) {
            Some(EndReason::NoSpeech)
        } else {
            None
        }
    }

    /// Samples from the start to the end of the last speech frame (0 before any): the
    /// utterance without its trailing pause.
    pub fn speech_end(&self) -> u64 {
        self.speech_end
    }

    /// Whether a speech frame was seen.
    #[cfg(test)]
    fn heard_speech(&self) -> bool {
        self.heard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_in_dbfs() {
        assert_eq!(Endpointer::level_dbfs(&[]), f32::NEG_INFINITY);
        assert_eq!(Endpointer::level_dbfs(&[0; 100]), f32::NEG_INFINITY);
        // A full-scale square wave is 0 dBFS; half amplitude -6.02 dB.
        let square: [i16; 4] = [-32768, -32768, -32768, -32768];
        assert!(Endpointer::level_dbfs(&square).abs() < 1e-6);
        let half = [16384i16, -16384, 16384, -16384];
        assert!((Endpointer::level_dbfs(&half) + 6.0206).abs() < 1e-3);
    }

    fn tone(level: i16, n: usize) -> std::vec::Vec<i16> {
        (0..n).map(|i| if i % 2 == 0 { level } else { -level }).collect()
    }

    #[test]
    fn ends_at_a_pause_after_speech() {
        let mut e = Endpointer::new(EndpointConfig::default());
        let speech = tone(3000, 1280); // -20.8 dBFS
        let quiet = tone(30, 1280); // -60.8 dBFS
        assert_eq!(e.push(&quiet), None);
        for _ in 0..10 {
            assert_eq!(e.push(&speech), None);
        }
        assert_eq!(e.speech_end(), 11 * 1280);
        // 700 ms = 11,200 samples = 8.75 chunks: the 9th quiet chunk ends it.
        for _ in 0..8 {
            assert_eq!(e.push(&quiet), None);
        }
        assert_eq!(e.push(&quiet), Some(EndReason::Pause));
        assert!(e.heard_speech());
        e.reset();
        assert!(!e.heard_speech());
    }

    #[test]
    fn ends_without_speech_and_at_the_maximum() {
        let config = EndpointConfig { no_speech_ms: 800, max_ms: 1600, ..Default::default() };
        let mut e = Endpointer::new(config);
        let quiet = tone(30, 1280);
        let ends: std::vec::Vec<_> = (0..10).map_while(|_| Some(e.push(&quiet))).collect();
        assert_eq!(ends.iter().position(|r| r.is_some()), Some(9)); // 10 x 80 ms = 800 ms
        assert_eq!(ends[9], Some(EndReason::NoSpeech));
        let mut e = Endpointer::new(config);
        let loud = tone(10_000, 1280);
        let first = (0..30).find_map(|i| e.push(&loud).map(|r| (i, r)));
        assert_eq!(first, Some((19, EndReason::MaxLength))); // 20 x 1280 = 1.6 s
    }
}
