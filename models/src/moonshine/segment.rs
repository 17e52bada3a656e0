//! Splitting long audio into segments the encoder accepts, at quiet points, as it is read.
//!
//! A segment is at most `max` samples. While more than `max` samples remain, the next cut is
//! placed in the quietest 200 ms window (sum of squares over 20 frames of 10 ms) whose centre
//! lies between `max / 2` and `max - MIN_SEGMENT` samples from the segment's start, so a
//! cut falls in a pause between words whenever the speech has one. Every segment but the
//! last is between `max / 2` and `max - MIN_SEGMENT` samples, and the last is longer than
//! [`MIN_SEGMENT`] (1 s) unless the whole input is: a cut is only made when more than `max`
//! samples remain, so at least `max + 1 - (max - MIN_SEGMENT)` follow it. (Moonshine turns
//! a fraction of a second of audio into noise words such as "The the".)
//!
//! [`Segmenter`] makes the same cuts while the audio arrives, holding at most `max` samples
//! plus the last piece pushed; [`split`] is the whole-clip form. A cut depends only on the
//! `max` samples after the previous one, so both give the same segments for any piece sizes.

use alloc::vec::Vec;
use core::ops::Range;

/// Samples per energy frame (10 ms at 16 kHz).
const FRAME: usize = 160;
/// Frames per smoothing window (200 ms): long enough to span a pause between words, short
/// enough to find one.
const WINDOW: usize = 20;
/// Shortest segment a cut leaves after it: 16 000 samples (1 s at 16 kHz).
pub const MIN_SEGMENT: usize = 16_000;
/// Smallest `max` accepted: room for a cut between `max / 2` and `max - MIN_SEGMENT`.
pub const MIN_MAX: usize = 2 * MIN_SEGMENT + 2 * WINDOW * FRAME;

/// Contiguous ranges covering `0..samples.len()`, each at most `max` samples, cut at
/// low-energy points (see the [module documentation](self)). One range when the audio fits
/// (none for empty audio).
///
/// # Panics
/// When `max < MIN_MAX` (38 400 samples, 2.4 s): no room to search for a pause.
pub fn split(samples: &[f32], max: usize) -> Vec<Range<usize>> {
    check_max(max);
    let mut ranges = Vec::new();
    let mut start = 0;
    while samples.len() - start > max {
        let cut = cut_point(&samples[start..start + max]);
        ranges.push(start..start + cut);
        start += cut;
    }
    if start < samples.len() {
        ranges.push(start..samples.len());
    }
    ranges
}

fn check_max(max: usize) {
    assert!(max >= MIN_MAX, "segment: max below {MIN_MAX} samples");
}

/// One segment from a [`Segmenter`]: where it starts in the input (in samples) and its
/// samples.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Index of the segment's first sample in the whole input.
    pub start: u64,
    /// The segment's samples (at most `max`).
    pub samples: Vec<f32>,
}

/// The cuts of [`split`], made while the audio arrives: [`Segmenter::push`] the samples as
/// they are read and take every [`Segmenter::pop`]ped segment after each push; at the end
/// of the input, [`Segmenter::finish`] gives the rest. It holds at most `max` samples plus
/// the last piece pushed.
#[derive(Clone, Debug)]
pub struct Segmenter {
    max: usize,
    buffer: Vec<f32>,
    start: u64,
}

impl Segmenter {
    /// A segmenter cutting segments of at most `max` samples.
    ///
    /// # Panics
    /// When `max < MIN_MAX` (38 400 samples).
    pub fn new(max: usize) -> Segmenter {
        check_max(max);
        Segmenter { max, buffer: Vec::new(), start: 0 }
    }

    /// Appends the next samples of the input.
    pub fn push(&mut self, samples: &[f32]) {
        self.buffer.extend_from_slice(samples);
    }

    /// The next segment whose end is decided (more than `max` samples are held), if any.
    pub fn pop(&mut self) -> Option<Segment> {
        if self.buffer.len() <= self.max {
            return None;
        }
        let cut = cut_point(&self.buffer[..self.max]);
        Some(self.take(cut))
    }

    /// The rest of the input after its end: the remaining segments (none if nothing is
    /// held), as [`split`] gives them.
    pub fn finish(&mut self) -> Vec<Segment> {
        let mut out = Vec::new();
        while let Some(s) = self.pop() {
            out.push(s);
        }
        if !self.buffer.is_empty() {
            let n = self.buffer.len();
            out.push(self.take(n));
        }
        out
    }

    /// Samples held and not yet returned in a segment.
    pub fn held(&self) -> usize {
        self.buffer.len()
    }

    fn take(&mut self, n: usize) -> Segment {
        let rest = self.buffer.split_off(n);
        let samples = core::mem::replace(&mut self.buffer, rest);
        let start = self.start;
        self.start += n as u64;
        Segment { start, samples }
    }
}

/// Where to cut the `max` samples `audio` that start a segment (more follow): the centre of
/// the quietest 200 ms window whose centre lies in `audio.len() / 2 ..= audio.len() -
/// MIN_SEGMENT`, on a frame boundary; the latest on ties. [`split`] and [`Segmenter`] cut
/// here; so do the VAD's decode windows ([`crate::vad::windows`]) when speech runs longer
/// than 30 s.
///
/// # Panics
/// When `audio.len() < MIN_MAX`.
pub fn cut_point(audio: &[f32]) -> usize {
    check_max(audio.len());
    let (from, to) = (audio.len() / 2, audio.len() - MIN_SEGMENT);
    let energy: Vec<f64> = audio
        .chunks_exact(FRAME)
        .map(|f| f.iter().map(|&x| f64::from(x) * f64::from(x)).sum())
        .collect();
    let mut best = (f64::INFINITY, to);
    let mut sum: f64 = energy[..WINDOW].iter().sum();
    for first in 0..=energy.len() - WINDOW {
        if first > 0 {
            sum += energy[first + WINDOW - 1] - energy[first - 1];
        }
        let centre = (first + WINDOW / 2) * FRAME;
        if centre > to {
            break;
        }
        if centre >= from && sum <= best.0 {
            best = (sum, centre);
        }
    }
    best.1
}
#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A 440 Hz-ish square wave with silent gaps at `gaps` (sample ranges).
    fn speech_with_gaps(len: usize, gaps: &[Range<usize>]) -> Vec<f32> {
        (0..len)
            .map(|i| {
                if gaps.iter().any(|g| g.contains(&i)) {
                    0.0
                } else if (i / 18) % 2 == 0 {
                    0.3
                } else {
                    -0.3
                }
            })
            .collect()
    }

    #[test]
    fn short_audio_is_one_segment() {
        assert_eq!(split(&vec![0.1; 1000], 480_000), vec![0..1000]);
        assert_eq!(split(&[], 480_000), Vec::<Range<usize>>::new());
    }

    #[test]
    fn cuts_land_in_pauses_and_cover_everything() {
        // 70 s with pauses at 12 s, 25 s and 50 s (400 ms each); 30 s segments.
        let s = 16_000;
        let gaps = [12 * s..12 * s + 6400, 25 * s..25 * s + 6400, 50 * s..50 * s + 6400];
        let audio = speech_with_gaps(70 * s, &gaps);
        let ranges = split(&audio, 30 * s);
        assert_eq!(ranges.first().unwrap().start, 0);
        assert_eq!(ranges.last().unwrap().end, audio.len());
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for r in &ranges {
            assert!(r.len() <= 30 * s);
        }
        // The cuts: in the 25 s pause (the 12 s one is before the allowed half) and in the
        // 50 s one.
        let cuts: Vec<usize> = ranges[..ranges.len() - 1].iter().map(|r| r.end).collect();
        assert_eq!(cuts.len(), 2);
        assert!(gaps[1].contains(&cuts[0]), "{cuts:?}");
        assert!(gaps[2].contains(&cuts[1]), "{cuts:?}");
    }

    #[test]
    fn no_pause_still_cuts_within_bounds() {
        let audio = speech_with_gaps(100_000, &[]);
        let ranges = split(&audio, 40_000);
        assert!(ranges.iter().all(|r| !r.is_empty() && r.len() <= 40_000));
        assert_eq!(ranges.iter().map(|r| r.len()).sum::<usize>(), 100_000);
    }

    #[test]
    fn no_segment_after_a_cut_is_shorter_than_one_second() {
        // 30 s + 0.26 s of speech with a pause just before 30 s: the cut may not take it.
        let s = 16_000;
        let len = 30 * s + 4160;
        let pause = 29 * s + 8000..30 * s;
        let audio = speech_with_gaps(len, core::slice::from_ref(&pause));
        let ranges = split(&audio, 30 * s);
        assert_eq!(ranges.len(), 2);
        assert!(ranges[1].len() >= MIN_SEGMENT, "{ranges:?}");
        assert!(ranges[0].len() <= 30 * s - MIN_SEGMENT && ranges[0].len() >= 15 * s);
        // Every length from just over max up: the last segment is always >= 1 s.
        for extra in [1, 100, 4160, 15_999, 16_000, 16_001, 200_000, 480_001] {
            let audio = speech_with_gaps(30 * s + extra, &[]);
            let ranges = split(&audio, 30 * s);
            assert!(ranges.iter().all(|r| r.len() >= MIN_SEGMENT && r.len() <= 30 * s));
        }
    }

    #[test]
    fn the_segmenter_cuts_as_split_does_for_any_piece_sizes() {
        let s = 16_000;
        let gaps = [12 * s..12 * s + 6400, 40 * s..40 * s + 3000, 61 * s..61 * s + 8000];
        let audio = speech_with_gaps(95 * s + 777, &gaps);
        let expected = split(&audio, 30 * s);
        let mut state = 0x2545_f491u32;
        for max_piece in [1usize, 1280, 16_000, 480_000, 2_000_000] {
            let mut seg = Segmenter::new(30 * s);
            let (mut got, mut at) = (Vec::new(), 0);
            while at < audio.len() {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                let n = (1 + state as usize % max_piece).min(audio.len() - at);
                seg.push(&audio[at..at + n]);
                at += n;
                while let Some(x) = seg.pop() {
                    got.push(x);
                }
                assert!(seg.held() <= 30 * s + max_piece);
            }
            got.extend(seg.finish());
            let ranges: Vec<Range<usize>> =
                got.iter().map(|x| x.start as usize..x.start as usize + x.samples.len()).collect();
            assert_eq!(ranges, expected, "pieces up to {max_piece}");
            for (x, r) in got.iter().zip(&expected) {
                assert_eq!(x.samples, audio[r.clone()]);
            }
        }
        assert!(Segmenter::new(30 * s).finish().is_empty());
    }
}
