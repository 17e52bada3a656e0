//! Decode windows for speech recognition: which spans of a stream Moonshine decodes, so that
//! silence before, between and after speech does not empty the transcript.
//!
//! Moonshine tends to end at once (an empty transcript) when speech is surrounded by
//! silence or low noise, and decoding every speech segment alone splits phrases and loses
//! words. So the audio is cut into *decode windows* built from the speech segments of
//! [`SpeechSegmenter`] (silero-vad's `get_speech_timestamps` rule over [`Vad`]
//! probabilities):
//! - a window runs from its first segment's start to its last segment's end, with
//!   [`WindowConfig::pad`] (100 ms) more on each side (clamped to the input and to the end
//!   of the previous window);
//! - a segment that starts less than [`WindowConfig::join_gap`] (2 s) after the previous
//!   one's end joins its window, unless the window would then exceed 30 s (Moonshine's
//!   limit): a command with pauses stays one window, and long talk is cut between
//!   segments;
//! - speech that runs longer than 30 s without a segment boundary is cut at quiet points
//!   exactly as audio is without a VAD ([`cut_point`]);
//! - audio outside every window (silence, noise) is never decoded.
//!
//! Each piece popped by [`SpeechWindows::pop`] is decoded whole; the transcript is the
//! pieces' texts joined with a space.
//!
//! # Memory and latency
//! The open window's audio is held until the window closes: at most 30 s, plus the pause
//! after its last segment that a following segment may still claim (under `join_gap` plus
//! the segmenter's decision delay, 130 ms with the defaults), plus the last piece pushed.
//! A window closes as soon as no later segment can join it: `join_gap` after its last
//! segment ended, or when the next speech cannot fit in its 30 s.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use super::detector::Vad;
use super::segments::{SegmentConfig, SpeechSegment, SpeechSegmenter, WINDOW_SAMPLES};
use crate::error::Error;
use crate::moonshine::segment::{cut_point, Segment};
use crate::moonshine::MAX_SAMPLES;

/// Longest window, in samples (30 s: [`MAX_SAMPLES`]).
const MAX: u64 = MAX_SAMPLES as u64;

/// How segments become decode windows (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowConfig {
    /// Samples added before a window's first segment and after its last (default 1600:
    /// 100 ms; on top of the segments' own `speech_pad`).
    pub pad: u64,
    /// A segment starting fewer samples than this after the previous segment's end joins
    /// its window (default 32 000: 2 s).
    pub join_gap: u64,
}

impl Default for WindowConfig {
    fn default() -> Self {
        Self { pad: 1600, join_gap: 32_000 }
    }
}

/// The window being gathered.
#[derive(Clone, Copy, Debug)]
struct Open {
    /// First sample of the window (moves on when long speech is cut).
    start: u64,
    /// End of the window's last final segment (`None` while its first segment is still
    /// being decided: speech has started but may yet be too short to count).
    last_end: Option<u64>,
    /// Onset of the speech that opened a window with no final segment yet.
    opened_by: u64,
}

/// Voice activity, speech segments and decode windows over one stream (module docs):
/// push 16 kHz samples as they arrive, pop the pieces to decode.
pub struct SpeechWindows {
    vad: Vad,
    /// Probabilities of the last push (reused).
    probabilities: Vec<f32>,
    windows: Windows,
}

/// The segments and windows of [`SpeechWindows`], fed the samples and their probabilities.
struct Windows {
    segmenter: SpeechSegmenter,
    config: WindowConfig,
    /// Samples from `held_start` to the end of the input so far.
    held: VecDeque<f32>,
    held_start: u64,
    /// Samples pushed.
    total: u64,
    /// The end of the audio the segmenter has judged: its windows (at the end of the
    /// input, up to the input's end). Every decision is taken at this position, not at the
    /// end of the samples pushed, so the pieces do not depend on how the audio is pushed.
    now: u64,
    window: Option<Open>,
    /// End of the last closed window (windows never overlap).
    closed_end: u64,
    ready: VecDeque<Segment>,
    /// Windows closed so far.
    closed: u64,
    /// End of the last final segment (padded, as [`SpeechSegment::end`]).
    last_segment_end: Option<u64>,
}

impl SpeechWindows {
    /// Windows over `vad`'s probabilities, segmented by `segments` and grouped by `config`.
    ///
    /// # Errors
    /// [`Error::Segments`] when `segments` does not validate.
    pub fn new(vad: Vad, segments: SegmentConfig, config: WindowConfig) -> Result<Self, Error> {
        Ok(Self { vad, probabilities: Vec::new(), windows: Windows::new(&segments, config)? })
    }

    /// Back to the start of a stream (the VAD's state, the segmenter, every held sample and
    /// piece); sample positions count from 0 again.
    pub fn reset(&mut self) {
        self.vad.reset();
        self.windows.reset();
    }

    /// Feeds the next samples (16 kHz mono, full scale 1).
    ///
    /// # Errors
    /// As [`Vad::push`] (NaN or infinite samples: nothing is used).
    pub fn push(&mut self, samples: &[f32]) -> Result<(), Error> {
        let probabilities = &mut self.probabilities;
        probabilities.clear();
        self.vad.push(samples, |p| probabilities.push(p))?;
        self.windows.push(samples, probabilities);
        Ok(())
    }

    /// Ends the input: the last partial VAD window, the open segment and window are
    /// closed; every remaining piece is then available from [`SpeechWindows::pop`]. Pushing
    /// more afterwards continues the stream as if the last window had been zero-padded;
    /// call [`SpeechWindows::reset`] to start a new one.
    ///
    /// # Errors
    /// As [`Vad::finish`].
    pub fn finish(&mut self) -> Result<(), Error> {
        let probabilities = &mut self.probabilities;
        probabilities.clear();
        self.vad.finish(|p| probabilities.push(p))?;
        self.windows.finish(probabilities)
    }

    /// The next piece to decode, if one is decided.
    pub fn pop(&mut self) -> Option<Segment> {
        self.windows.ready.pop_front()
    }

    /// Whether a window is open: speech has started and its window is not closed yet.
    pub fn window_open(&self) -> bool {
        self.windows.window.is_some()
    }

    /// Windows closed so far (each with at least one segment; all their pieces are in the
    /// queue of [`SpeechWindows::pop`] by then).
    pub fn windows_closed(&self) -> u64 {
        self.windows.closed
    }

    /// Samples pushed since the start.
    pub fn samples(&self) -> u64 {
        self.windows.total
    }

    /// Samples held: the open window's audio and what a window may still claim.
    pub fn held(&self) -> usize {
        self.windows.held.len()
    }

    /// The silence after speech so far, in samples: from the end of the last final speech
    /// segment to the earliest start that a segment still to come can have
    /// ([`SpeechSegmenter::next_start_bound`]). Both ends are the padded ones of
    /// `get_speech_timestamps` (`speech_pad_ms` each), so this is the gap between two
    /// segments as that function would report them: it grows with the silence, stops at a
    /// speech onset and never counts speech. `None` before the first segment is final.
    /// An endpointer ends a command once this reaches its pause.
    pub fn silence_after_speech(&self) -> Option<u64> {
        self.windows.silence_after_speech()
    }
}

impl Windows {
    fn new(segments: &SegmentConfig, config: WindowConfig) -> Result<Self, Error> {
        Ok(Self {
            segmenter: SpeechSegmenter::new(segments)?,
            config,
            held: VecDeque::new(),
            held_start: 0,
            total: 0,
            now: 0,
            window: None,
            closed_end: 0,
            ready: VecDeque::new(),
            closed: 0,
            last_segment_end: None,
        })
    }

    fn reset(&mut self) {
        self.segmenter.reset();
        self.held.clear();
        self.held_start = 0;
        self.total = 0;
        self.now = 0;
        self.window = None;
        self.closed_end = 0;
        self.ready.clear();
        self.closed = 0;
        self.last_segment_end = None;
    }

    /// The next samples and the probabilities of the windows they complete.
    fn push(&mut self, samples: &[f32], probabilities: &[f32]) {
        self.held.extend(samples);
        self.total += samples.len() as u64;
        self.run_segmenter(probabilities);
    }

    /// The end of the input, with the probability of a zero-padded last window, if any.
    fn finish(&mut self, probabilities: &[f32]) -> Result<(), Error> {
        self.run_segmenter(probabilities);
        self.now = self.total;
        // The VAD computed a window for every 512 samples begun, as the segmenter counts
        // them, so the length always matches.
        for segment in self.segmenter.finish(self.total)? {
            self.on_segment(segment);
        }
        if let Some(open) = self.window.take() {
            self.close(open);
        }
        self.trim(self.total);
        Ok(())
    }

    /// Runs the segment rule over the probabilities of the last push, moving the windows
    /// on after each.
    fn run_segmenter(&mut self, probabilities: &[f32]) {
        for &p in probabilities {
            self.now = (self.now + WINDOW_SAMPLES).min(self.total);
            for segment in self.segmenter.push(p) {
                self.on_segment(segment);
            }
            self.advance();
        }
        // An open window starts before every segment still to come (they are its own or
        // later ones); without one, no segment starts before the segmenter's bound.
        let bound = self.segmenter.next_start_bound().saturating_sub(self.config.pad);
        self.trim(self.window.map_or(bound, |w| w.start));
    }

    /// A final segment: joins the open window or starts a new one.
    fn on_segment(&mut self, s: SpeechSegment) {
        let now = self.now;
        let (start, end) = (s.start.min(now), s.end.min(now));
        self.last_segment_end = Some(end);
        let joins = self.window.is_some_and(|w| match w.last_end {
            None => true,
            Some(last) => {
                start < last + self.config.join_gap && end + self.config.pad <= w.start + MAX
            }
        });
        if !joins {
            if let Some(open) = self.window.take() {
                self.close(open);
            }
            self.window = Some(self.open_at(start, start));
        }
        if let Some(open) = &mut self.window {
            open.last_end = Some(end);
        }
    }

    /// A window whose first segment starts at `start` (its onset `onset`).
    fn open_at(&self, start: u64, onset: u64) -> Open {
        let start = start.saturating_sub(self.config.pad).max(self.held_start).max(self.closed_end);
        Open { start, last_end: None, opened_by: onset }
    }

    /// After a probability: closes the open window when no later segment can join it,
    /// drops one whose speech turned out too short, opens one when speech starts, and cuts
    /// speech that runs past 30 s.
    fn advance(&mut self) {
        let now = self.now;
        let bound = self.segmenter.next_start_bound();
        let speaking = self.segmenter.open_segment();
        if let Some(open) = self.window {
            let close = match open.last_end {
                // No later segment can start within the join gap, or the speech going on
                // already makes the window longer than 30 s.
                Some(last) => {
                    bound >= last + self.config.join_gap
                        || (speaking.is_some() && now > open.start + MAX)
                }
                // Opened by speech that ended without making a segment.
                None => {
                    speaking.is_none_or(|s| s.onset != open.opened_by) && bound > open.opened_by
                }
            };
            if close {
                self.window = None;
                self.close(open);
            }
        }
        if self.window.is_none() {
            if let Some(s) = speaking {
                self.window = Some(self.open_at(s.start, s.onset));
            }
        }
        // Speech longer than a window: cut it at a quiet point, as without a VAD.
        if let Some(open) = &mut self.window {
            if speaking.is_some() && open.last_end.is_none() && now > open.start + MAX {
                let end = open.start + MAX;
                let piece = Self::take(&self.held, self.held_start, open.start, end, true);
                open.start += piece.samples.len() as u64;
                self.ready.push_back(piece);
            }
        }
    }

    /// Closes `open`: its audio up to the padded end of its last segment, cut at quiet
    /// points where it is longer than 30 s. A window without a final segment is dropped.
    fn close(&mut self, mut open: Open) {
        let Some(last) = open.last_end else { return };
        let end = (last + self.config.pad).min(self.now);
        while end > open.start + MAX {
            let piece = Self::take(&self.held, self.held_start, open.start, open.start + MAX, true);
            open.start += piece.samples.len() as u64;
            self.ready.push_back(piece);
        }
        if end > open.start {
            self.ready.push_back(Self::take(&self.held, self.held_start, open.start, end, false));
        }
        self.closed_end = end;
        self.closed += 1;
    }

    /// The held samples `start..end` as a piece; with `cut`, only up to the quiet point
    /// [`cut_point`] picks in them (more speech follows).
    fn take(held: &VecDeque<f32>, held_start: u64, start: u64, end: u64, cut: bool) -> Segment {
        let (from, to) = ((start - held_start) as usize, (end - held_start) as usize);
        let mut samples: Vec<f32> = held.range(from..to).copied().collect();
        if cut {
            samples.truncate(cut_point(&samples));
        }
        Segment { start, samples }
    }

    /// [`SpeechWindows::silence_after_speech`].
    fn silence_after_speech(&self) -> Option<u64> {
        let bound = self.segmenter.next_start_bound();
        self.last_segment_end.map(|end| bound.saturating_sub(end))
    }

    /// Drops held samples before `keep` (no window can claim them any more).
    fn trim(&mut self, keep: u64) {
        let drop = (keep.saturating_sub(self.held_start) as usize).min(self.held.len());
        self.held.drain(..drop);
        self.held_start += drop as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: usize = 512;

    /// Audio whose sample `i` is `i` (exact in f32 below 2^24), silent where `quiet` says.
    fn audio(len: usize, quiet: impl Fn(usize) -> bool) -> Vec<f32> {
        (0..len).map(|i| if quiet(i) { 0.0 } else { i as f32 }).collect()
    }

    /// Probability 0.9 in the windows of `speech` (`(first, end)` window ranges), else 0.1.
    fn probabilities(windows: usize, speech: &[(usize, usize)]) -> Vec<f32> {
        (0..windows)
            .map(|w| if speech.iter().any(|&(a, b)| (a..b).contains(&w)) { 0.9 } else { 0.1 })
            .collect()
    }

    /// Pieces of `audio` with `probs` (one per window begun), pushed in pieces of `sizes`
    /// (cycled), with the largest number of samples held along the way.
    fn run(
        audio: &[f32],
        probs: &[f32],
        sizes: &[usize],
        config: WindowConfig,
    ) -> (Vec<Segment>, usize) {
        let mut w = Windows::new(&SegmentConfig::default(), config).unwrap();
        let (mut at, mut scored, mut most) = (0, 0, 0);
        for &n in sizes.iter().cycle() {
            if at >= audio.len() {
                break;
            }
            let piece = &audio[at..(at + n).min(audio.len())];
            at += piece.len();
            let complete = at / W;
            w.push(piece, &probs[scored..complete]);
            scored = complete;
            most = most.max(w.held.len());
        }
        w.finish(&probs[scored..]).unwrap();
        assert!(w.held.is_empty());
        (w.ready.into_iter().collect(), most)
    }

    fn span(p: &Segment) -> (u64, u64) {
        (p.start, p.start + p.samples.len() as u64)
    }

    fn check_samples(pieces: &[Segment], audio: &[f32]) {
        for p in pieces {
            let (a, b) = span(p);
            assert_eq!(p.samples, audio[a as usize..b as usize]);
        }
    }

    #[test]
    fn silence_after_speech_grows_in_silence_and_stops_at_speech() {
        let mut w = Windows::new(&SegmentConfig::default(), WindowConfig::default()).unwrap();
        let p = probabilities(200, &[(10, 40), (100, 130)]);
        let mut seen = Vec::new();
        for (i, &prob) in p.iter().enumerate() {
            w.push(&[0.0; W], &[prob]);
            seen.push((i, w.silence_after_speech()));
        }
        // None until the first segment is final: its end is decided 100 ms (4 windows of
        // p < 0.35) after the offset at window 40.
        assert!(seen[..43].iter().all(|(_, s)| s.is_none()), "{seen:?}");
        let first_end = 40 * 512 + 480;
        // Then the gap to the next possible start (the next window, less the 30 ms pad).
        for &(i, s) in &seen[44..100] {
            assert_eq!(s, Some(((i + 1) * 512 - 480 - first_end) as u64), "window {i}");
        }
        // Speech from window 100: the gap stops at its padded onset, and it never counts
        // the speech.
        let gap = (100 * 512 - 480 - first_end) as u64;
        for &(i, s) in &seen[100..134] {
            assert_eq!(s, Some(gap), "window {i}");
        }
        // The second segment is final: the gap counts from its end.
        let (i, s) = seen[150];
        assert_eq!(s, Some(((i + 1) * 512 - 480 - (130 * 512 + 480)) as u64));
        w.reset();
        assert_eq!(w.silence_after_speech(), None);
    }

    #[test]
    fn one_utterance_is_decoded_with_100_ms_around_it_and_nothing_else() {
        let a = audio(5 * 16_000, |_| false);
        let p = probabilities(a.len().div_ceil(W), &[(10, 40)]);
        for sizes in [&[a.len()][..], &[1], &[511, 513, 7], &[1280]] {
            let (pieces, _) = run(&a, &p, sizes, WindowConfig::default());
            // The segment with silero-vad's 30 ms pad, then 100 ms more.
            let (start, end) = (10 * 512 - 480 - 1600, 40 * 512 + 480 + 1600);
            assert_eq!(pieces.iter().map(span).collect::<Vec<_>>(), [(start, end)], "{sizes:?}");
            check_samples(&pieces, &a);
        }
        // Too short to be speech (7 windows, 224 ms): nothing is decoded.
        let p = probabilities(a.len().div_ceil(W), &[(50, 57)]);
        assert!(run(&a, &p, &[1000], WindowConfig::default()).0.is_empty());
        // Silence: nothing, and little is held.
        let p = probabilities(a.len().div_ceil(W), &[]);
        let (pieces, most) = run(&a, &p, &[1000], WindowConfig::default());
        assert!(pieces.is_empty() && most < 4000, "{most}");
    }

    #[test]
    fn segments_under_the_join_gap_share_a_window_up_to_30_s() {
        let s = 16_000 / W; // windows per second, rounded down (31)
        let a = audio(60 * 16_000, |_| false);
        let n = a.len().div_ceil(W);
        // 1 s apart: one window; 3 s apart: two.
        let p = probabilities(n, &[(s, 3 * s), (4 * s, 6 * s), (9 * s, 10 * s)]);
        let (pieces, _) = run(&a, &p, &[1280], WindowConfig::default());
        assert_eq!(pieces.len(), 2, "{:?}", pieces.iter().map(span).collect::<Vec<_>>());
        assert_eq!(span(&pieces[0]).0, (s * 512 - 480 - 1600) as u64);
        assert_eq!(span(&pieces[0]).1, (6 * s * 512 + 480 + 1600) as u64);
        check_samples(&pieces, &a);
        // Three 10 s segments 1 s apart: the third would make the window longer than 30 s,
        // so it starts another; windows never overlap.
        let p = probabilities(n, &[(s, 11 * s), (12 * s, 22 * s), (23 * s, 33 * s)]);
        let (pieces, _) = run(&a, &p, &[4000], WindowConfig::default());
        let spans: Vec<_> = pieces.iter().map(span).collect();
        assert_eq!(spans.len(), 2, "{spans:?}");
        assert!(spans[0].1 <= spans[1].0 && spans.iter().all(|(a, b)| b - a <= MAX), "{spans:?}");
        assert!(spans[0].1 >= (22 * s * 512) as u64 && spans[1].0 <= (23 * s * 512 - 480) as u64);
        check_samples(&pieces, &a);
    }

    #[test]
    fn the_pieces_do_not_depend_on_how_the_audio_is_pushed() {
        // Segments 0.2-1.2 s apart (they join), runs of speech longer than 30 s, and pauses
        // over the join gap: every rule of the windows runs. Quiet audio in the gaps.
        let mut speech = Vec::new();
        let mut w = 10;
        for (len, gap) in [(200, 20), (900, 35), (40, 80), (1200, 10), (300, 70), (500, 6)] {
            speech.push((w, w + len));
            w += len + gap;
        }
        // With silence after the last segment, and with speech up to the end of the input.
        for n in [w + 100, w - 6] {
            let a = audio(n * W, |i| !speech.iter().any(|&(s, e)| (s * W..e * W).contains(&i)));
            let p = probabilities(n, &speech);
            let (want, _) = run(&a, &p, &[W], WindowConfig::default());
            let spans = |v: &[Segment]| v.iter().map(span).collect::<Vec<_>>();
            assert!(want.len() >= 6, "{:?}", spans(&want));
            if n < w {
                // The open speech ends with the input, and so does its piece.
                assert_eq!(spans(&want).last().unwrap().1, (n * W) as u64);
            }
            for sizes in [&[a.len()][..], &[1], &[1024], &[2_097_152], &[511, 513, 7, 40_000]] {
                let (got, _) = run(&a, &p, sizes, WindowConfig::default());
                assert_eq!(spans(&got), spans(&want), "{n} windows, {sizes:?}");
            }
            check_samples(&want, &a);
        }
    }

    #[test]
    fn speech_longer_than_30_s_is_cut_at_quiet_points_with_bounded_memory() {
        // 75 s of speech (by the VAD) with a quiet 0.3 s every 7 s.
        let a = audio(80 * 16_000, |i| i % (7 * 16_000) < 4800);
        let n = a.len().div_ceil(W);
        let p = probabilities(n, &[(16, 75 * 16_000 / W)]);
        let (pieces, most) = run(&a, &p, &[1280], WindowConfig::default());
        let spans: Vec<_> = pieces.iter().map(span).collect();
        assert!(spans.len() >= 3, "{spans:?}");
        for pair in spans.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "contiguous: {spans:?}");
        }
        for (k, &(start, end)) in spans.iter().enumerate() {
            assert!(end - start <= MAX, "{spans:?}");
            if k + 1 < spans.len() {
                // Cut inside a quiet stretch.
                assert!(end as usize % (7 * 16_000) < 4800, "{spans:?}");
            }
        }
        assert_eq!(spans[0].0, (16 * 512 - 480 - 1600) as u64);
        check_samples(&pieces, &a);
        assert!(most <= MAX as usize + 2 * 16_000, "held {most}");
    }
}
