//! Splitting long audio into segments the encoder accepts, at quiet points.
//!
//! A segment is at most `max` samples. Each cut is placed in the quietest 200 ms window
//! (sum of squares over 20 frames of 10 ms) whose centre lies in the second half of the
//! remaining allowance, so segments are between `max / 2` and `max` samples except the
//! last, and a cut falls in a pause between words whenever the speech has one.

use alloc::vec::Vec;
use core::ops::Range;

/// Samples per energy frame (10 ms at 16 kHz).
const FRAME: usize = 160;
/// Frames per smoothing window (200 ms): long enough to span a pause between words, short
/// enough to find one.
const WINDOW: usize = 20;

/// Contiguous ranges covering `0..samples.len()`, each at most `max` samples, cut at
/// low-energy points. One range when the audio fits (none for empty audio).
///
/// # Panics
/// When `max < 2 * WINDOW * FRAME` (6400 samples): no room to search for a pause.
pub fn split(samples: &[f32], max: usize) -> Vec<Range<usize>> {
    assert!(max >= 2 * WINDOW * FRAME, "segment::split: max below 6400 samples");
    let mut ranges = Vec::new();
    let mut start = 0;
    while samples.len() - start > max {
        let cut = quietest_point(&samples[start..start + max], max / 2);
        ranges.push(start..start + cut);
        start += cut;
    }
    if start < samples.len() {
        ranges.push(start..samples.len());
    }
    ranges
}

/// The centre (in samples from the start of `audio`) of the quietest 200 ms window whose
/// centre lies in `from..audio.len()`, rounded to a frame boundary; the latest on ties.
fn quietest_point(audio: &[f32], from: usize) -> usize {
    let energy: Vec<f64> = audio
        .chunks_exact(FRAME)
        .map(|f| f.iter().map(|&x| f64::from(x) * f64::from(x)).sum())
        .collect();
    let mut best = (f64::INFINITY, audio.len());
    let mut sum: f64 = energy[..WINDOW].iter().sum();
    for first in 0..=energy.len() - WINDOW {
        if first > 0 {
            sum += energy[first + WINDOW - 1] - energy[first - 1];
        }
        let centre = (first + WINDOW / 2) * FRAME;
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
}
