//! Speech segments from Silero VAD's speech probabilities, by the rule of silero-vad's
//! `get_speech_timestamps` (PyPI `silero-vad` 6.2.3, MIT, `silero_vad/utils_vad.py`, which
//! hands the probabilities to `get_speech_timestamps_from_probs`), computed while the
//! probabilities arrive.
//!
//! # Input
//! One probability per window of [`WINDOW_SAMPLES`] (512) samples of 16 kHz audio; window `i`
//! covers samples `512 * i .. 512 * (i + 1)` and its *position* is `512 * i`. A stream of
//! `n` samples has `⌈n / 512⌉` windows: when `n` is not a multiple of 512, the last window is
//! the remainder padded with zeros (as silero-vad feeds it), and it still counts from its
//! position like every other. The stream's length `n` matters only at the end: a segment
//! still open ends there, and no padded end goes past it.
//!
//! # The rule
//! The defaults are those of [`SegmentConfig::DEFAULT`]; all durations are converted to
//! samples at 16 samples per millisecond. Windows are examined in order; the state is either
//! *outside speech* or *inside a run* that began at some position (its *onset*).
//!
//! 1. **Onset.** Outside speech, a window whose probability is at least `threshold` opens a
//!    run at its position, and nothing else happens in that window.
//! 2. **Silence, with hysteresis.** Inside a run, the first window below `neg_threshold`
//!    marks a *tentative end* at its position. Later windows between the two thresholds
//!    neither add to that silence nor cancel it; a window at or above `threshold` cancels
//!    it (speech is back). A cancelled silence that lasted more than
//!    `min_silence_at_max_speech_ms` (from the tentative end to the window that cancelled
//!    it) is remembered as a place where rule 4 may cut.
//! 3. **End.** The run ends at the tentative end as soon as a window below `neg_threshold`
//!    lies at least `min_silence_duration_ms` after it. The run is kept only when it is
//!    longer than `min_speech_duration_ms` (end − onset strictly greater); otherwise it is
//!    dropped.
//! 4. **Length limit.** Before the silence test of rules 2 and 3, a window inside a run
//!    that lies more than `16000 × max_speech_duration_s − 512 − 2 × speech_pad` samples
//!    after the onset cuts the run, which is then kept whatever its length:
//!    * with `use_max_poss_sil_at_max_speech` (the default), when rule 2 remembered a
//!      silence: at the longest one (the earliest of equal length). The run ends where that
//!      silence began, and a new run begins where it ended (the window where speech came
//!      back).
//!    * without it (silero-vad's legacy cut), when some silence of the run had a window
//!      below `neg_threshold` more than `min_silence_at_max_speech_ms` after its start
//!      (whether speech came back since or not): at the start of the latest such silence.
//!      A new run begins where speech first came back after it, if it did; if not, no run is
//!      open.
//!    * in either mode, with no such silence: at the window's own position; no run is open,
//!      and the window is not examined further (it cannot open a run either).
//!
//!    After a cut at a silence, the remembered silences and any silence in progress are
//!    forgotten, and the window goes on to the silence test (where it may start a new one).
//! 5. **End of stream.** A run still open ends at the stream's length `n`, and is kept when
//!    it is longer than `min_speech_duration_ms`.
//! 6. **Padding.** Kept runs become segments: the first start moves `speech_pad` earlier
//!    (not below 0) and the last end `speech_pad` later (not past `n`). Between two
//!    consecutive runs whose gap is shorter than `2 × speech_pad`, the earlier end moves
//!    later and the later start earlier by `⌊gap / 2⌋` each; otherwise the earlier end moves
//!    `speech_pad` later and the later start `speech_pad` earlier.
//!
//! A NaN probability compares false with both thresholds, as in silero-vad (Python's
//! comparisons): it neither opens speech, cancels a silence nor counts as silence, like a
//! value between the thresholds. Infinities compare as the extreme values they are.
//!
//! # Streaming and latency
//! [`SpeechSegmenter::push`] takes one probability and returns every segment that no
//! continuation of the stream can change any more (any further probabilities, and any stream
//! length consistent with the windows seen): exactly the earliest point, and at most three
//! segments per window. [`SpeechSegmenter::finish`] takes the stream's length and returns
//! the rest. Concatenated, they are the segments silero-vad gives on the whole stream.
//!
//! How late that is. For a run that ends in silence, with `e` its tentative end (a window
//! position), the padded end `e + speech_pad` is final once (a) the run has ended (rule 3:
//! at the first window below `neg_threshold` at least `min_silence_duration_ms` after `e`),
//! (b) no new run can start less than `2 × speech_pad` after `e` (the next window's position
//! is at least `e + 2 × speech_pad`) and (c) the stream is known to reach `e + speech_pad`
//! (the latest window's position is at least `e + speech_pad − 1`). In windows, with `pad`
//! and `min_silence` in samples: the segment comes out with the window at
//! `e + 512 × max(⌈min_silence / 512⌉, ⌈2 × pad / 512⌉ − 1, ⌈(pad − 1) / 512⌉)`
//! when that window is silent. With the defaults (100 ms, 30 ms) that is the window at
//! `e + 2048`, the one that ends the run: the segment is out once the stream has reached
//! `e + 2560` samples, 2080 samples (130 ms) past the segment's end.
//!
//! A segment waits longer only when the next run opens less than `2 × speech_pad` after it
//! (so the two share the gap): then it comes out once that run is certain to be kept
//! ([`OpenSegment::confirmed`]: it has lasted longer than `min_speech_duration_ms`, or the
//! length limit is sure to cut it first) or has been dropped. After a silence that can
//! happen only when `2 × speech_pad` exceeds `min_silence` rounded up to whole windows plus
//! one window (never with the defaults); it happens when rule 4 cuts a run at a window with
//! no silence to cut at and speech goes on in the next window (the defaults then hold the
//! cut segment about 250 ms). A run cut at a remembered silence comes out with the cutting
//! window when the new run begins at least `2 × speech_pad` later (always with the defaults:
//! the silence is longer than 98 ms). A run still open at the end of the stream comes out of
//! [`SpeechSegmenter::finish`].
//!
//! The segmenter is a fixed-size state (no allocation): silero-vad's list of remembered
//! silences is only ever asked for its longest (first) entry, which is all that is kept.
//! [`speech_segments`] (feature `alloc`) is the whole-array form.

#[cfg(feature = "alloc")]
use alloc::vec::Vec;
use core::fmt;

/// Sample rate of the probabilities' audio (Hz): silero-vad's 16 kHz model.
pub const SAMPLE_RATE: u32 = 16_000;
/// Samples per window: one probability per 512 samples at 16 kHz.
pub const WINDOW_SAMPLES: u64 = 512;
/// Samples per millisecond at [`SAMPLE_RATE`] (`16000 * ms / 1000` in silero-vad is exact).
const SAMPLES_PER_MS: u64 = 16;

/// The parameters of silero-vad's `get_speech_timestamps` that shape segments, with its
/// defaults ([`SegmentConfig::DEFAULT`]). `sampling_rate` is fixed at 16 kHz and
/// `return_seconds` / `time_resolution` are [`SpeechSegment::seconds`]. The millisecond
/// parameters are whole milliseconds, as the function's signature declares them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SegmentConfig {
    /// Speech threshold, a probability in `0.0..=1.0` (default 0.5; silero-vad `threshold`).
    /// A window whose probability is at least this opens speech, and inside speech it cancels
    /// a silence in progress.
    pub threshold: f64,
    /// Silence threshold, a probability in `0.0..=threshold` (silero-vad `neg_threshold`).
    /// Inside speech, only windows strictly below it count as silence. `None` (the default)
    /// means silero-vad's default `max(threshold - 0.15, 0.01)` (0.35 for threshold 0.5;
    /// for a threshold below 0.16 it is 0.01, above the threshold itself when that is below
    /// 0.01, as in silero-vad).
    pub neg_threshold: Option<f64>,
    /// Shortest speech kept, in milliseconds (default 250; silero-vad
    /// `min_speech_duration_ms`). A run that ends in silence, or at the end of the stream, is
    /// dropped unless it is strictly longer (before padding); runs cut at the length limit
    /// are always kept.
    pub min_speech_duration_ms: u32,
    /// Silence that ends speech, in milliseconds (default 100; silero-vad
    /// `min_silence_duration_ms`). Speech ends at the first window below `neg_threshold` that
    /// lies at least this long after the silence began.
    pub min_silence_duration_ms: u32,
    /// Padding added on each side of a segment, in milliseconds (default 30; silero-vad
    /// `speech_pad_ms`). Segments closer than twice this share the gap between them instead.
    pub speech_pad_ms: u32,
    /// Length limit of one run, in seconds (default `f64::INFINITY`, no limit; silero-vad
    /// `max_speech_duration_s`); must be positive. A run is cut once a window lies more than
    /// `max_speech_duration_s * 16000 - 512 - 2 * pad` samples after its onset.
    pub max_speech_duration_s: f64,
    /// Shortest silence the length limit may cut at, in milliseconds (default 98; silero-vad
    /// `min_silence_at_max_speech`): only silences strictly longer qualify.
    pub min_silence_at_max_speech_ms: u32,
    /// At the length limit, cut at the longest remembered silence of the run (default
    /// `true`); `false` is silero-vad's legacy cut at the latest silence long enough
    /// (silero-vad `use_max_poss_sil_at_max_speech`).
    pub use_max_poss_sil_at_max_speech: bool,
}

impl SegmentConfig {
    /// silero-vad 6.2.3's defaults.
    pub const DEFAULT: SegmentConfig = SegmentConfig {
        threshold: 0.5,
        neg_threshold: None,
        min_speech_duration_ms: 250,
        min_silence_duration_ms: 100,
        speech_pad_ms: 30,
        max_speech_duration_s: f64::INFINITY,
        min_silence_at_max_speech_ms: 98,
        use_max_poss_sil_at_max_speech: true,
    };

    /// The silence threshold in force: `neg_threshold`, or silero-vad's default
    /// `max(threshold - 0.15, 0.01)` computed in f64 as it does.
    pub fn effective_neg_threshold(&self) -> f64 {
        match self.neg_threshold {
            Some(neg) => neg,
            None => (self.threshold - 0.15).max(0.01),
        }
    }

    /// Checks the parameters: `threshold` in `0.0..=1.0`, an explicit `neg_threshold` in
    /// `0.0..=threshold`, `max_speech_duration_s` positive (infinity allowed). NaN fails every
    /// check.
    pub fn validate(&self) -> Result<(), SegmentError> {
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(SegmentError::Threshold(self.threshold));
        }
        if let Some(neg) = self.neg_threshold {
            if !(0.0..=self.threshold).contains(&neg) {
                return Err(SegmentError::NegThreshold {
                    neg_threshold: neg,
                    threshold: self.threshold,
                });
            }
        }
        if self.max_speech_duration_s.is_nan() || self.max_speech_duration_s <= 0.0 {
            return Err(SegmentError::MaxSpeechDuration(self.max_speech_duration_s));
        }
        Ok(())
    }
}

impl Default for SegmentConfig {
    fn default() -> Self {
        SegmentConfig::DEFAULT
    }
}

/// Why a configuration or a stream was refused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SegmentError {
    /// `threshold` is NaN or outside `0.0..=1.0`.
    Threshold(f64),
    /// An explicit `neg_threshold` is NaN or outside `0.0..=threshold`.
    NegThreshold {
        /// The value given.
        neg_threshold: f64,
        /// The configuration's `threshold`.
        threshold: f64,
    },
    /// `max_speech_duration_s` is NaN, zero or negative.
    MaxSpeechDuration(f64),
    /// The stream's length does not match the windows: `total_samples` samples make
    /// `⌈total_samples / 512⌉` windows.
    Length {
        /// Probabilities given.
        windows: u64,
        /// The stream's length given, in samples.
        total_samples: u64,
    },
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SegmentError::Threshold(t) => {
                write!(f, "VAD threshold {t} is not a probability in 0..=1")
            }
            SegmentError::NegThreshold { neg_threshold, threshold } => {
                write!(f, "VAD neg_threshold {neg_threshold} is not in 0..=threshold ({threshold})")
            }
            SegmentError::MaxSpeechDuration(s) => {
                write!(f, "VAD max_speech_duration_s {s} is not a positive duration")
            }
            SegmentError::Length { windows, total_samples } => write!(
                f,
                "VAD stream of {total_samples} samples has {} windows of 512, not {windows}",
                total_samples.div_ceil(WINDOW_SAMPLES)
            ),
        }
    }
}

impl core::error::Error for SegmentError {}

/// One speech segment, in samples of the 16 kHz stream: `start..end`, padding included.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SpeechSegment {
    /// First sample.
    pub start: u64,
    /// One past the last sample (at most the stream's length).
    pub end: u64,
}

impl SpeechSegment {
    /// `(start, end)` in seconds as silero-vad's `return_seconds=True` gives them:
    /// [`samples_to_seconds`] of each, the end at most `total_samples / 16000` (the stream's
    /// length in seconds, unrounded). `time_resolution` is the number of decimal places
    /// (silero-vad's default is 1).
    pub fn seconds(&self, total_samples: u64, time_resolution: u32) -> (f64, f64) {
        let length = total_samples as f64 / f64::from(SAMPLE_RATE);
        (
            samples_to_seconds(self.start, time_resolution),
            samples_to_seconds(self.end, time_resolution).min(length),
        )
    }
}

/// `samples / 16000` rounded to `decimals` decimal places as Python's `round(x, decimals)`
/// rounds a float (what silero-vad's `return_seconds` does): the quotient is first a double
/// (`samples / 16000.0`, correctly rounded), then rounded half to even *on that double's
/// exact binary value*, and the decimal result converted back to the nearest double. So
/// 800 samples at 1 decimal give 0.1 (the double 0.05 lies above 1/20), and 4000 samples
/// give 0.2 (0.25 is exact: half to even). Exact for `samples < 2^53`.
pub fn samples_to_seconds(samples: u64, decimals: u32) -> f64 {
    round_decimal(samples as f64 / f64::from(SAMPLE_RATE), decimals)
}

/// Python's `round(x, decimals)` for a finite `x >= 0` that is zero or at least 2^-14
/// (every `samples / 16000`).
fn round_decimal(x: f64, decimals: u32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: not a quotient of samples; x rounds to 0 at every resolution handled.
        return 0.0;
    }
    let mantissa = (bits & ((1 << 52) - 1)) | (1 << 52);
    let exponent = biased - 1075; // x = mantissa * 2^exponent
    if exponent >= 0 {
        return x; // an integer
    }
    // One unit in the last place is 2^-shift. When it exceeds 10^-decimals, the decimal nearest
    // to x is nearer than half a unit, so it converts back to x itself. For x >= 2^-14 that
    // holds from 22 decimals on (2^-66 > 10^-22).
    let shift = exponent.unsigned_abs();
    if decimals > 22 {
        return x;
    }
    let scale = 10u128.pow(decimals);
    if shift < 128 && scale > 1u128 << shift {
        return x;
    }
    // Now x * 10^decimals < 2^53: round mantissa * 10^decimals / 2^shift half to even.
    let scaled = u128::from(mantissa) * scale; // < 2^53 * 10^22 < 2^127
    let rounded = if shift >= 128 {
        0 // scaled < 2^127 <= half of 2^shift
    } else {
        let quotient = scaled >> shift;
        let remainder = scaled & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        if remainder > half || (remainder == half && quotient & 1 == 1) {
            quotient + 1
        } else {
            quotient
        }
    };
    // Both are exact doubles (rounded <= 2^53, 10^22 < 2^53 * 2^22): one correctly rounded
    // division, as Python's conversion of the decimal string.
    rounded as f64 / scale as f64
}

/// A run of speech in progress (see [`SpeechSegmenter::open_segment`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenSegment {
    /// Where the run began, unpadded: the position of the window that opened it (or, after a
    /// cut at the length limit, the position where speech came back after the silence).
    pub onset: u64,
    /// The start the segment will be reported with, padding applied, if the run is kept.
    pub start: u64,
    /// Whether the run is certain to be kept (it can no longer be dropped as too short,
    /// whatever follows).
    pub confirmed: bool,
}

/// The segments a call released, in order: an iterator over at most three segments (no
/// allocation).
#[derive(Clone, Debug, Default)]
#[must_use = "segments are released only once"]
pub struct Released {
    segments: [SpeechSegment; 3],
    len: u8,
    next: u8,
}

impl Released {
    fn add(&mut self, segment: SpeechSegment) {
        // At most three per call (see SpeechSegmenter::push); a fourth would be a bug, and is
        // dropped rather than panicking in the audio path.
        debug_assert!(self.len < 3);
        if let Some(slot) = self.segments.get_mut(usize::from(self.len)) {
            *slot = segment;
            self.len += 1;
        }
    }

    /// The segments not yet taken.
    pub fn as_slice(&self) -> &[SpeechSegment] {
        &self.segments[usize::from(self.next)..usize::from(self.len)]
    }

    /// Whether no segment is left.
    pub fn is_empty(&self) -> bool {
        self.next == self.len
    }
}

impl Iterator for Released {
    type Item = SpeechSegment;

    fn next(&mut self) -> Option<SpeechSegment> {
        if self.next >= self.len {
            return None;
        }
        let segment = self.segments.get(usize::from(self.next)).copied();
        self.next += 1;
        segment
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.len - self.next);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Released {}

/// A kept run whose padded end is not known yet.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// Padded start (final).
    start: u64,
    /// Unpadded end.
    end: u64,
}

/// The parameters in samples, as silero-vad derives them.
#[derive(Clone, Copy, Debug)]
struct Params {
    threshold: f64,
    neg_threshold: f64,
    min_speech: u64,
    min_silence: u64,
    pad: u64,
    /// `16000 * max_speech_duration_s - 512 - 2 * pad`, in f64 as silero-vad computes it.
    max_speech: f64,
    min_silence_at_max_speech: u64,
    cut_at_longest_silence: bool,
}

/// Speech segments by silero-vad's rule, fed one probability per 512-sample window (see the
/// [module documentation](self) for the rule and how soon segments come out).
///
/// ```
/// use neon_models::vad::segments::{SegmentConfig, SpeechSegment, SpeechSegmenter};
///
/// let mut segmenter = SpeechSegmenter::new(&SegmentConfig::DEFAULT).unwrap();
/// let mut segments = Vec::new();
/// // 0.64 s of speech between silences: windows 3..23.
/// for i in 0..40 {
///     let p = if (3..23).contains(&i) { 0.9 } else { 0.1 };
///     segments.extend(segmenter.push(p));
/// }
/// segments.extend(segmenter.finish(40 * 512).unwrap());
/// assert_eq!(segments, [SpeechSegment { start: 3 * 512 - 480, end: 23 * 512 + 480 }]);
/// ```
#[derive(Clone, Debug)]
pub struct SpeechSegmenter {
    config: SegmentConfig,
    params: Params,
    /// Windows pushed since the start of the stream.
    windows: u64,
    /// Inside a run (silero-vad's `triggered`).
    triggered: bool,
    /// The run's onset while `triggered`.
    onset: u64,
    /// Start of the silence in progress, 0 for none (silero-vad's `temp_end`; a silence can
    /// never start at window 0, where no run is open yet).
    temp_end: u64,
    /// Legacy cut point (silero-vad's `prev_end`), 0 for none.
    prev_end: u64,
    /// Where speech came back after it (silero-vad's `next_start`).
    next_start: u64,
    /// The first longest remembered silence: (start, length). silero-vad keeps a list
    /// (`possible_ends`) and takes its first maximum; nothing else reads it.
    longest_silence: Option<(u64, u64)>,
    /// Unpadded end of the last kept run, for the padding of the next.
    last_end: Option<u64>,
    /// The last kept run, until its padded end is final.
    pending: Option<Pending>,
}

impl SpeechSegmenter {
    /// A segmenter at the start of a stream; fails when the configuration does not
    /// [validate](SegmentConfig::validate).
    pub fn new(config: &SegmentConfig) -> Result<SpeechSegmenter, SegmentError> {
        config.validate()?;
        let pad = u64::from(config.speech_pad_ms) * SAMPLES_PER_MS;
        let params = Params {
            threshold: config.threshold,
            neg_threshold: config.effective_neg_threshold(),
            min_speech: u64::from(config.min_speech_duration_ms) * SAMPLES_PER_MS,
            min_silence: u64::from(config.min_silence_duration_ms) * SAMPLES_PER_MS,
            pad,
            max_speech: f64::from(SAMPLE_RATE) * config.max_speech_duration_s
                - WINDOW_SAMPLES as f64
                - 2.0 * pad as f64,
            min_silence_at_max_speech: u64::from(config.min_silence_at_max_speech_ms)
                * SAMPLES_PER_MS,
            cut_at_longest_silence: config.use_max_poss_sil_at_max_speech,
        };
        Ok(SpeechSegmenter::at_start(*config, params))
    }

    /// A segmenter with `config` and its `params` at the start of a stream.
    const fn at_start(config: SegmentConfig, params: Params) -> SpeechSegmenter {
        SpeechSegmenter {
            config,
            params,
            windows: 0,
            triggered: false,
            onset: 0,
            temp_end: 0,
            prev_end: 0,
            next_start: 0,
            longest_silence: None,
            last_end: None,
            pending: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &SegmentConfig {
        &self.config
    }

    /// Windows pushed since the start of the stream.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    /// Whether a run of speech is in progress (opened and neither ended nor dropped).
    pub fn in_speech(&self) -> bool {
        self.triggered
    }

    /// The run of speech in progress, if any: where it began, the start it will be reported
    /// with, and whether it is already certain to be kept.
    pub fn open_segment(&self) -> Option<OpenSegment> {
        self.triggered.then(|| OpenSegment {
            onset: self.onset,
            start: self.padded_start(self.onset),
            confirmed: self.run_certain(),
        })
    }

    /// A lower bound on the start of every segment not released yet, whatever follows: the
    /// start of the kept run whose end is still undecided, else the start the open run will
    /// have if kept, else the start a run opening at the next window would have. (A run
    /// that opens later, or after a cut of the open run, starts no earlier.) Audio before
    /// it belongs to no segment still to come.
    pub fn next_start_bound(&self) -> u64 {
        if let Some(pending) = self.pending {
            pending.start
        } else if self.triggered {
            self.padded_start(self.onset)
        } else {
            self.padded_start(self.windows * WINDOW_SAMPLES)
        }
    }

    /// Back to the start of a stream (same configuration).
    pub fn reset(&mut self) {
        *self = SpeechSegmenter::at_start(self.config, self.params);
    }

    /// Feeds the probability of the next window and returns the segments that became final:
    /// usually none, at most three (two runs can be kept in one window only with
    /// `min_silence_duration_ms` 0, and a kept run can release the previous one and itself).
    /// NaN is treated as silero-vad treats it (module documentation).
    pub fn push(&mut self, probability: f32) -> Released {
        let mut out = Released::default();
        let position = self.windows * WINDOW_SAMPLES;
        self.windows += 1;
        self.step(f64::from(probability), position, &mut out);
        self.release(&mut out);
        out
    }

    /// Ends the stream of `total_samples` samples (the audio's length; its windows are all
    /// pushed: `⌈total_samples / 512⌉` of them) and returns the remaining segments (at most
    /// two). The segmenter is then back at the start of a stream. A length that does not
    /// match the windows is an error, and the state is left as it was.
    pub fn finish(&mut self, total_samples: u64) -> Result<Released, SegmentError> {
        if total_samples.div_ceil(WINDOW_SAMPLES) != self.windows {
            return Err(SegmentError::Length { windows: self.windows, total_samples });
        }
        let mut out = Released::default();
        // A run still open ends with the stream (it began in a window, so before its end).
        if self.triggered && total_samples - self.onset > self.params.min_speech {
            self.keep(self.onset, total_samples, &mut out);
        }
        if let Some(last) = self.pending.take() {
            out.add(SpeechSegment {
                start: last.start,
                end: total_samples.min(last.end + self.params.pad),
            });
        }
        self.reset();
        Ok(out)
    }

    /// silero-vad's loop body for one window at `position`.
    fn step(&mut self, p: f64, position: u64, out: &mut Released) {
        let params = self.params;
        let speech = p >= params.threshold;
        // Speech back after a silence: remember the silence if long enough, cancel it.
        if speech && self.temp_end != 0 {
            let silence = position - self.temp_end;
            if silence > params.min_silence_at_max_speech
                && self.longest_silence.is_none_or(|(_, longest)| silence > longest)
            {
                self.longest_silence = Some((self.temp_end, silence));
            }
            self.temp_end = 0;
            if self.next_start < self.prev_end {
                self.next_start = position;
            }
        }
        if speech && !self.triggered {
            self.triggered = true;
            self.onset = position;
            return;
        }
        if self.triggered && (position - self.onset) as f64 > params.max_speech {
            match self.longest_silence {
                Some((end, length)) if params.cut_at_longest_silence => {
                    self.keep(self.onset, end, out);
                    let next = end + length;
                    // Always true in practice (the silence is shorter than its end's
                    // position); kept as silero-vad states it.
                    if next < end + position {
                        self.onset = next;
                    } else {
                        self.triggered = false;
                    }
                }
                _ if self.prev_end != 0 => {
                    self.keep(self.onset, self.prev_end, out);
                    if self.next_start < self.prev_end {
                        self.triggered = false;
                    } else {
                        self.onset = self.next_start;
                    }
                }
                _ => {
                    self.keep(self.onset, position, out);
                    self.triggered = false;
                    self.forget_silences();
                    return;
                }
            }
            self.forget_silences();
        }
        if p < params.neg_threshold && self.triggered {
            if self.temp_end == 0 {
                self.temp_end = position;
            }
            let silence = position - self.temp_end;
            if !params.cut_at_longest_silence && silence > params.min_silence_at_max_speech {
                self.prev_end = self.temp_end;
            }
            if silence < params.min_silence {
                return;
            }
            if self.temp_end - self.onset > params.min_speech {
                self.keep(self.onset, self.temp_end, out);
            }
            self.forget_silences();
            self.triggered = false;
        }
    }

    fn forget_silences(&mut self) {
        self.prev_end = 0;
        self.next_start = 0;
        self.temp_end = 0;
        self.longest_silence = None;
    }

    /// The padded start of a run with this onset, kept after the runs kept so far.
    fn padded_start(&self, onset: u64) -> u64 {
        let pad = self.params.pad;
        match self.last_end {
            Some(end) if onset.saturating_sub(end) < 2 * pad => onset - (onset - end) / 2,
            _ => onset.saturating_sub(pad),
        }
    }

    /// A run is kept: its start is final now; the previous run's end is final too.
    fn keep(&mut self, onset: u64, end: u64, out: &mut Released) {
        let start = self.padded_start(onset);
        if let Some(previous) = self.pending.take() {
            // Runs never overlap; the gap is >= 0.
            let gap = onset.saturating_sub(previous.end);
            let pad = self.params.pad;
            // With a gap of 2 * pad or more, the stream extends past `onset`, so the end is
            // not clamped to its length.
            let padded = if gap < 2 * pad { gap / 2 } else { pad };
            out.add(SpeechSegment { start: previous.start, end: previous.end + padded });
        }
        self.pending = Some(Pending { start, end });
        self.last_end = Some(end);
    }

    /// Releases the pending run when no continuation can change its padded end.
    fn release(&mut self, out: &mut Released) {
        let Some(pending) = self.pending else {
            return;
        };
        let pad = self.params.pad;
        let end = if self.triggered {
            // The next kept run is the open one (onset known) or a later one.
            let gap = self.onset.saturating_sub(pending.end);
            if gap >= 2 * pad {
                // Either way the gap is >= 2 * pad, and the stream extends past the onset.
                pending.end + pad
            } else if self.run_certain() {
                pending.end + gap / 2
            } else {
                return;
            }
        } else {
            // The next run can open at the next window at the earliest; the stream may end
            // now, as short as one sample into the last window.
            let next_window = self.windows * WINDOW_SAMPLES;
            let shortest_stream = next_window - WINDOW_SAMPLES + 1;
            if next_window >= pending.end + 2 * pad && shortest_stream >= pending.end + pad {
                pending.end + pad
            } else {
                return;
            }
        };
        out.add(SpeechSegment { start: pending.start, end });
        self.pending = None;
    }

    /// Whether the open run is kept whatever follows. It is dropped only when it ends in
    /// silence or with the stream while no longer than `min_speech`: by the stream ending
    /// now (as short as one sample into the last window), or by a silence in progress that
    /// reaches `min_silence` before the length limit cuts the run (a cut keeps it). A later
    /// silence would end it later than the stream ending now.
    fn run_certain(&self) -> bool {
        if !self.triggered {
            return false;
        }
        let params = &self.params;
        let shortest_stream = (self.windows - 1) * WINDOW_SAMPLES + 1;
        if shortest_stream - self.onset <= params.min_speech {
            return false;
        }
        if self.temp_end != 0 && self.temp_end - self.onset <= params.min_speech {
            // The window where the silence would end the run, if all that follows is silent.
            let ending =
                self.windows.max((self.temp_end + params.min_silence).div_ceil(WINDOW_SAMPLES));
            let cut_first = (ending * WINDOW_SAMPLES - self.onset) as f64 > params.max_speech;
            if !cut_first {
                return false;
            }
        }
        true
    }
}

/// The segments of a whole stream: `probabilities` (one per 512-sample window) of audio
/// `total_samples` long, by [`SpeechSegmenter`].
#[cfg(feature = "alloc")]
pub fn speech_segments(
    probabilities: &[f32],
    total_samples: u64,
    config: &SegmentConfig,
) -> Result<Vec<SpeechSegment>, SegmentError> {
    let mut segmenter = SpeechSegmenter::new(config)?;
    let windows = probabilities.len() as u64;
    if total_samples.div_ceil(WINDOW_SAMPLES) != windows {
        return Err(SegmentError::Length { windows, total_samples });
    }
    let mut segments = Vec::new();
    for &p in probabilities {
        segments.extend(segmenter.push(p));
    }
    segments.extend(segmenter.finish(total_samples)?);
    Ok(segments)
}

#[cfg(test)]
mod tests;
