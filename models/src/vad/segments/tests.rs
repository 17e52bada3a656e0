//! Unit tests of the segment rule (see the module documentation).

use super::*;
use std::vec;
use std::vec::Vec;

/// silero-vad's loop and padding pass restated line by line over lists, with its float
/// arithmetic (independent of the streaming form; the committed reference of
/// `tests/vad_segments.rs` checks both against silero-vad itself).
fn literal(probs: &[f32], total: u64, c: &SegmentConfig) -> Vec<SpeechSegment> {
    let sr = 16000.0f64;
    let min_speech = sr * f64::from(c.min_speech_duration_ms) / 1000.0;
    let pad = sr * f64::from(c.speech_pad_ms) / 1000.0;
    let max_speech = sr * c.max_speech_duration_s - 512.0 - 2.0 * pad;
    let min_silence = sr * f64::from(c.min_silence_duration_ms) / 1000.0;
    let min_silence_max = sr * f64::from(c.min_silence_at_max_speech_ms) / 1000.0;
    let threshold = c.threshold;
    let neg = c.neg_threshold.unwrap_or((threshold - 0.15).max(0.01));
    let use_max = c.use_max_poss_sil_at_max_speech;
    let total = total as i64;

    let mut triggered = false;
    let mut speeches: Vec<(i64, i64)> = vec![];
    let mut current: Option<i64> = None;
    let (mut temp_end, mut prev_end, mut next_start) = (0i64, 0i64, 0i64);
    let mut possible_ends: Vec<(i64, i64)> = vec![];
    for (i, &p) in probs.iter().enumerate() {
        let p = f64::from(p);
        let cur = 512 * i as i64;
        if p >= threshold && temp_end != 0 {
            let sil = cur - temp_end;
            if sil as f64 > min_silence_max {
                possible_ends.push((temp_end, sil));
            }
            temp_end = 0;
            if next_start < prev_end {
                next_start = cur;
            }
        }
        if p >= threshold && !triggered {
            triggered = true;
            current = Some(cur);
            continue;
        }
        if triggered && (cur - current.unwrap()) as f64 > max_speech {
            if use_max && !possible_ends.is_empty() {
                let mut best = possible_ends[0];
                for &candidate in &possible_ends[1..] {
                    if candidate.1 > best.1 {
                        best = candidate;
                    }
                }
                prev_end = best.0;
                let dur = best.1;
                speeches.push((current.take().unwrap(), prev_end));
                next_start = prev_end + dur;
                if next_start < prev_end + cur {
                    current = Some(next_start);
                } else {
                    triggered = false;
                }
                (prev_end, next_start, temp_end) = (0, 0, 0);
                possible_ends.clear();
            } else if prev_end != 0 {
                speeches.push((current.take().unwrap(), prev_end));
                if next_start < prev_end {
                    triggered = false;
                } else {
                    current = Some(next_start);
                }
                (prev_end, next_start, temp_end) = (0, 0, 0);
                possible_ends.clear();
            } else {
                speeches.push((current.take().unwrap(), cur));
                (prev_end, next_start, temp_end) = (0, 0, 0);
                triggered = false;
                possible_ends.clear();
                continue;
            }
        }
        if p < neg && triggered {
            if temp_end == 0 {
                temp_end = cur;
            }
            let sil_now = cur - temp_end;
            if !use_max && sil_now as f64 > min_silence_max {
                prev_end = temp_end;
            }
            if (sil_now as f64) < min_silence {
                continue;
            }
            let start = current.take().unwrap();
            if (temp_end - start) as f64 > min_speech {
                speeches.push((start, temp_end));
            }
            (prev_end, next_start, temp_end) = (0, 0, 0);
            triggered = false;
            possible_ends.clear();
            continue;
        }
    }
    if let Some(start) = current {
        if (total - start) as f64 > min_speech {
            speeches.push((start, total));
        }
    }
    let n = speeches.len();
    for i in 0..n {
        if i == 0 {
            speeches[0].0 = (speeches[0].0 as f64 - pad).max(0.0) as i64;
        }
        if i != n - 1 {
            let gap = speeches[i + 1].0 - speeches[i].1;
            if (gap as f64) < 2.0 * pad {
                speeches[i].1 += gap.div_euclid(2);
                speeches[i + 1].0 = (speeches[i + 1].0 - gap.div_euclid(2)).max(0);
            } else {
                speeches[i].1 = (total as f64).min(speeches[i].1 as f64 + pad) as i64;
                speeches[i + 1].0 = (speeches[i + 1].0 as f64 - pad).max(0.0) as i64;
            }
        } else {
            speeches[i].1 = (total as f64).min(speeches[i].1 as f64 + pad) as i64;
        }
    }
    speeches.into_iter().map(|(s, e)| SpeechSegment { start: s as u64, end: e as u64 }).collect()
}

fn stream(probs: &[f32], total: u64, c: &SegmentConfig) -> Vec<SpeechSegment> {
    let mut s = SpeechSegmenter::new(c).unwrap();
    let mut out = Vec::new();
    for &p in probs {
        out.extend(s.push(p));
    }
    out.extend(s.finish(total).unwrap());
    out
}

/// Probabilities `value` for `n` windows, for building sequences.
fn run(value: f32, n: usize) -> Vec<f32> {
    vec![value; n]
}

fn seg(start: u64, end: u64) -> SpeechSegment {
    SpeechSegment { start, end }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn random_config(rng: &mut Rng) -> SegmentConfig {
    let threshold = rng.pick(&[0.5, 0.5, 0.3, 0.7, 0.05, 0.005]);
    let neg_threshold = match rng.below(3) {
        0 => Some(threshold * 0.5),
        1 => Some(threshold),
        _ => None,
    };
    SegmentConfig {
        threshold,
        neg_threshold,
        min_speech_duration_ms: rng.pick(&[0, 50, 250, 250]),
        min_silence_duration_ms: rng.pick(&[0, 20, 50, 100, 100, 200, 300]),
        speech_pad_ms: rng.pick(&[0, 10, 16, 30, 30, 32, 100]),
        max_speech_duration_s: rng.pick(&[
            f64::INFINITY,
            f64::INFINITY,
            0.1,
            0.2,
            0.3,
            0.45,
            0.6,
            1.0,
            2.5,
        ]),
        min_silence_at_max_speech_ms: rng.pick(&[0, 50, 98]),
        use_max_poss_sil_at_max_speech: rng.below(2) == 0,
    }
}

/// Runs of speech, silence, values between the thresholds, exact threshold values and NaN.
fn random_probs(rng: &mut Rng, c: &SegmentConfig, windows: usize) -> Vec<f32> {
    let t = c.threshold as f32;
    let neg = c.effective_neg_threshold() as f32;
    let mut probs = Vec::with_capacity(windows);
    while probs.len() < windows {
        let kind = rng.below(12);
        let longest = if rng.below(3) == 0 { 40 } else { 8 };
        let len = 1 + rng.below(longest) as usize;
        for _ in 0..len {
            let u = rng.unit();
            probs.push(match kind {
                0..=3 => t + (1.0 - t) * u,
                4..=7 => neg * u,
                8 | 9 => neg + (t - neg) * u,
                10 => rng.pick(&[t, neg, f32::NAN]),
                _ => u,
            });
        }
    }
    probs.truncate(windows);
    probs
}

fn random_total(rng: &mut Rng, windows: usize) -> u64 {
    if windows == 0 {
        0
    } else {
        (windows as u64 - 1) * 512 + 1 + rng.below(512)
    }
}

/// A random case: a configuration ([`random_config`]), fewer than `max_windows`
/// probabilities ([`random_probs`]) and the stream's total samples ([`random_total`]).
fn random_case(rng: &mut Rng, max_windows: u64) -> (SegmentConfig, Vec<f32>, u64) {
    let c = random_config(rng);
    let windows = rng.below(max_windows) as usize;
    let probs = random_probs(rng, &c, windows);
    let total = random_total(rng, windows);
    (c, probs, total)
}

#[test]
fn stream_equals_literal_rule_on_random_sequences() {
    let mut rng = Rng(0x5eed_0001);
    for _ in 0..3000 {
        let (c, probs, total) = random_case(&mut rng, 300);
        let want = literal(&probs, total, &c);
        assert_eq!(stream(&probs, total, &c), want, "{c:?} {probs:?} {total}");
        assert_eq!(speech_segments(&probs, total, &c).unwrap(), want);
    }
}

/// The continuations that show a segment is not final yet (see `release` and
/// `run_certain`): the stream ending now at its shortest and longest, speech going on,
/// silence going on.
fn continuations(prefix: &[f32]) -> Vec<(Vec<f32>, u64)> {
    let n = prefix.len() as u64;
    let mut out = Vec::new();
    if n > 0 {
        out.push((prefix.to_vec(), (n - 1) * 512 + 1));
    }
    out.push((prefix.to_vec(), n * 512));
    for value in [1.0, 0.0] {
        let mut longer = prefix.to_vec();
        longer.extend(run(value, 64));
        out.push((longer, (n + 64) * 512));
    }
    out
}

/// Every segment comes out as soon as it is final, and not before: after the push that
/// releases it, every continuation gives it; before that push, some continuation gives
/// something else. `confirmed` means every continuation keeps the open run.
#[test]
fn segments_come_out_exactly_when_final() {
    let mut rng = Rng(0x5eed_0002);
    for _ in 0..2000 {
        let (c, probs, total) = random_case(&mut rng, 160);
        let windows = probs.len();
        let mut s = SpeechSegmenter::new(&c).unwrap();
        let mut released = 0usize;
        let mut highest_bound = 0;
        for w in 0..=windows {
            let before = &probs[..w];
            let bound = s.next_start_bound();
            let out: Vec<SpeechSegment> = if w < windows {
                s.push(probs[w]).collect()
            } else {
                s.clone().finish(total).unwrap().collect()
            };
            let after = &probs[..(w + 1).min(windows)];
            for (k, segment) in out.iter().enumerate() {
                let index = released + k;
                if w < windows {
                    for (p, t) in continuations(after) {
                        assert_eq!(
                            literal(&p, t, &c).get(index),
                            Some(segment),
                            "released too early: {c:?} {probs:?} window {w}"
                        );
                    }
                }
                let changes = continuations(before)
                    .into_iter()
                    .any(|(p, t)| literal(&p, t, &c).get(index) != Some(segment));
                assert!(changes, "released late: {c:?} {probs:?} window {w}");
            }
            // The bound holds for every segment still to come, and speech going on
            // reaches it.
            highest_bound = highest_bound.max(bound);
            for segment in &out {
                assert!(segment.start >= highest_bound, "{c:?} {probs:?} window {w}");
            }
            let (speech, speech_total) =
                continuations(before).swap_remove(if w == 0 { 1 } else { 2 });
            assert_eq!(
                literal(&speech, speech_total, &c).get(released).map(|x| x.start),
                Some(bound),
                "{c:?} {probs:?} window {w}"
            );
            released += out.len();
            if w < windows {
                if let Some(open) = s.open_segment() {
                    let index = released + usize::from(s.pending.is_some());
                    let kept: Vec<bool> = continuations(after)
                        .into_iter()
                        .map(|(p, t)| {
                            literal(&p, t, &c).get(index).map(|x| x.start) == Some(open.start)
                        })
                        .collect();
                    assert_eq!(open.confirmed, kept.iter().all(|&k| k), "{c:?} {probs:?} {w}");
                    // Speech going on keeps it.
                    assert!(kept[kept.len() - 2]);
                }
            }
        }
    }
}

#[test]
fn defaults_and_validation() {
    let c = SegmentConfig::default();
    assert_eq!(c, SegmentConfig::DEFAULT);
    assert_eq!(c.effective_neg_threshold(), 0.5 - 0.15);
    let low = SegmentConfig { threshold: 0.005, ..c };
    assert_eq!(low.effective_neg_threshold(), 0.01);
    assert!(SpeechSegmenter::new(&low).is_ok());
    for threshold in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
        let bad = SegmentConfig { threshold, ..c };
        assert!(matches!(bad.validate(), Err(SegmentError::Threshold(_))));
        assert!(SpeechSegmenter::new(&bad).is_err());
    }
    for neg in [f64::NAN, -0.01, 0.6] {
        let bad = SegmentConfig { neg_threshold: Some(neg), ..c };
        assert!(matches!(bad.validate(), Err(SegmentError::NegThreshold { .. })));
    }
    for max in [f64::NAN, 0.0, -1.0, f64::NEG_INFINITY] {
        let bad = SegmentConfig { max_speech_duration_s: max, ..c };
        assert!(matches!(bad.validate(), Err(SegmentError::MaxSpeechDuration(_))));
        assert!(speech_segments(&[], 0, &bad).is_err());
    }
    let msg = std::format!("{}", SegmentError::Length { windows: 3, total_samples: 2000 });
    assert!(msg.contains("4 windows"), "{msg}");
}

#[test]
fn empty_stream_and_length_mismatch() {
    let c = SegmentConfig::DEFAULT;
    assert_eq!(speech_segments(&[], 0, &c).unwrap(), []);
    assert!(speech_segments(&[], 1, &c).is_err());
    let mut s = SpeechSegmenter::new(&c).unwrap();
    for _ in 0..20 {
        assert!(s.push(0.9).is_empty());
    }
    // 20 windows: 9729..=10240 samples.
    for total in [0, 9728, 10241] {
        assert_eq!(
            s.finish(total).unwrap_err(),
            SegmentError::Length { windows: 20, total_samples: total }
        );
    }
    assert!(s.in_speech());
    assert_eq!(s.finish(9729).unwrap().as_slice(), [seg(0, 9729)]);
    // Back at the start of a stream.
    assert_eq!(s.windows(), 0);
    assert!(!s.in_speech());
}

#[test]
fn short_bursts_are_dropped() {
    let c = SegmentConfig::DEFAULT;
    // 250 ms = 4000 samples: 7 windows (3584) are dropped, 8 (4096) kept.
    for (burst, kept) in [(7, false), (8, true)] {
        let mut probs = run(0.0, 10);
        probs.extend(run(0.9, burst));
        probs.extend(run(0.0, 10));
        let got = stream(&probs, probs.len() as u64 * 512, &c);
        let want =
            if kept { vec![seg(10 * 512 - 480, (10 + burst as u64) * 512 + 480)] } else { vec![] };
        assert_eq!(got, want);
    }
}

#[test]
fn silence_needs_min_silence_below_neg_threshold() {
    let c = SegmentConfig::DEFAULT;
    // 4 silent windows (1536 < 1600 samples after the first) do not end speech ...
    let mut probs = run(0.9, 10);
    probs.extend(run(0.1, 4));
    probs.extend(run(0.9, 10));
    // ... and windows between the thresholds neither end it nor count as silence
    // before the first window below 0.35 ...
    probs.extend(run(0.4, 6));
    // ... but do not cancel a silence either: it began at window 31.
    probs.extend([0.1, 0.4, 0.4, 0.4, 0.4]);
    probs.extend(run(0.1, 10));
    let total = probs.len() as u64 * 512;
    assert_eq!(stream(&probs, total, &c), [seg(0, 30 * 512 + 480)]);
    assert_eq!(literal(&probs, total, &c), [seg(0, 30 * 512 + 480)]);
    // The threshold itself is speech; the silence threshold itself is not silence
    // (0.35f32 is below 0.35f64, so it is: use a value just above).
    let above_neg = 0.35f32.next_up();
    assert!(f64::from(above_neg) > c.effective_neg_threshold());
    let mut probs = run(0.5, 10);
    probs.extend(run(above_neg, 10));
    probs.extend(run(0.0, 10));
    assert_eq!(stream(&probs, 30 * 512, &c), [seg(0, 20 * 512 + 480)]);
}

#[test]
fn nan_is_between_the_thresholds() {
    let c = SegmentConfig::DEFAULT;
    let mut with_nan = run(0.9, 10);
    with_nan.extend(run(f32::NAN, 6));
    with_nan.extend([0.1, f32::NAN, f32::NAN, f32::NAN, f32::NAN, 0.1, 0.0]);
    with_nan.extend(run(f32::NAN, 5));
    let between: Vec<f32> = with_nan.iter().map(|&p| if p.is_nan() { 0.4 } else { p }).collect();
    let total = with_nan.len() as u64 * 512;
    let got = stream(&with_nan, total, &c);
    assert_eq!(got, stream(&between, total, &c));
    assert_eq!(got, [seg(0, 16 * 512 + 480)]);
    // Infinities are the extremes.
    let inf = [f32::INFINITY; 10];
    assert_eq!(stream(&inf, 5120, &c), [seg(0, 5120)]);
    let mut probs = run(f32::INFINITY, 10);
    probs.extend(run(f32::NEG_INFINITY, 10));
    assert_eq!(stream(&probs, 10240, &c), [seg(0, 10 * 512 + 480)]);
}

#[test]
fn speech_to_the_end_and_padding_clamps() {
    let c = SegmentConfig::DEFAULT;
    // Speech from window 0 (start clamped at 0) to the end of a stream of 20 windows
    // whose last holds 100 samples: the open run ends at the stream's length.
    let probs = run(0.9, 20);
    assert_eq!(stream(&probs, 19 * 512 + 100, &c), [seg(0, 19 * 512 + 100)]);
    // Too short at the end: 7 windows + 400 samples = 3984 <= 4000.
    let mut probs = run(0.0, 5);
    probs.extend(run(0.9, 8));
    assert_eq!(stream(&probs, 12 * 512 + 400, &c), []);
    assert_eq!(stream(&probs, 12 * 512 + 417, &c), [seg(5 * 512 - 480, 12 * 512 + 417)]);
    // A run ending in silence near the end (min silence 0 ends it at the first silent
    // window): end + pad clamped to the stream's length.
    let c0 = SegmentConfig { min_silence_duration_ms: 0, ..c };
    let mut probs = run(0.9, 10);
    probs.push(0.0);
    assert_eq!(stream(&probs, 10 * 512 + 10, &c0), [seg(0, 10 * 512 + 10)]);
    assert_eq!(stream(&probs, 11 * 512, &c0), [seg(0, 10 * 512 + 480)]);
}

#[test]
fn close_segments_share_the_gap() {
    // Pad 100 ms (1600 samples): a gap under 3200 samples is split in halves.
    let c =
        SegmentConfig { speech_pad_ms: 100, min_silence_duration_ms: 50, ..SegmentConfig::DEFAULT };
    let mut probs = run(0.0, 5);
    probs.extend(run(0.9, 10)); // 5..15
    probs.extend(run(0.0, 3)); // ends at 15*512 once 800 samples of silence: window 17
    probs.extend(run(0.9, 10)); // 18..28: gap 3 windows = 1536 < 3200
    probs.extend(run(0.0, 10));
    let total = probs.len() as u64 * 512;
    let want = [seg(5 * 512 - 1600, 15 * 512 + 768), seg(18 * 512 - 768, 28 * 512 + 1600)];
    assert_eq!(stream(&probs, total, &c), want);
    // Pad 0: no padding at all.
    let c0 = SegmentConfig { speech_pad_ms: 0, ..c };
    let want0 = [seg(5 * 512, 15 * 512), seg(18 * 512, 28 * 512)];
    assert_eq!(stream(&probs, total, &c0), want0);
}

#[test]
fn length_limit_cuts() {
    // 1 s limit: a run is cut once a window lies more than 16000 - 512 - 960 = 14528
    // samples after its onset, i.e. at window onset + 29.
    let c = SegmentConfig { max_speech_duration_s: 1.0, ..SegmentConfig::DEFAULT };
    // No silence: cut at the window itself, which is not examined further.
    let probs = run(0.9, 40);
    let got = stream(&probs, 40 * 512, &c);
    // The next run opens at window 30: a gap of 512 < 960 samples, shared.
    assert_eq!(got, [seg(0, 29 * 512 + 256), seg(30 * 512 - 256, 40 * 512)]);
    assert_eq!(got, literal(&probs, 40 * 512, &c));
    // A silence of 4 windows (2048 > 1568 samples) inside: cut there; the new run
    // starts where speech came back.
    let mut probs = run(0.9, 10);
    probs.extend(run(0.1, 4)); // 10..14
    probs.extend(run(0.9, 20)); // 14..34; the cut comes at window 29
    let total = probs.len() as u64 * 512;
    let got = stream(&probs, total, &c);
    assert_eq!(got, [seg(0, 10 * 512 + 480), seg(14 * 512 - 480, total)]);
    assert_eq!(got, literal(&probs, total, &c));
    // The legacy cut measures a silence while it lasts (up to its last silent window:
    // 1536 samples, not over 1568), so it finds none and cuts at window 29; the 4
    // windows of speech after that are too short.
    let legacy = SegmentConfig { use_max_poss_sil_at_max_speech: false, ..c };
    assert_eq!(stream(&probs, total, &legacy), [seg(0, 29 * 512 + 480)]);
    // With the defaults, a silence the legacy cut can use (over 1568 samples while it
    // lasts) is also long enough to end the run (1600); with a longer min silence
    // (300 ms) both cuts use the 5-window silence.
    let (c, legacy) = (
        SegmentConfig { min_silence_duration_ms: 300, ..c },
        SegmentConfig { min_silence_duration_ms: 300, ..legacy },
    );
    let mut probs = run(0.9, 10);
    probs.extend(run(0.1, 5)); // 10..15
    probs.extend(run(0.9, 20)); // 15..35
    let total = probs.len() as u64 * 512;
    let want = [seg(0, 10 * 512 + 480), seg(15 * 512 - 480, total)];
    assert_eq!(stream(&probs, total, &legacy), want);
    assert_eq!(stream(&probs, total, &c), want);
    assert_eq!(literal(&probs, total, &legacy), want);
}

#[test]
fn default_latency() {
    // Speech ends at window 20 (e = 10240); the run ends at window 24, and the segment
    // comes out of that very push.
    let c = SegmentConfig::DEFAULT;
    let mut s = SpeechSegmenter::new(&c).unwrap();
    for i in 0..40 {
        let p = if (3..20).contains(&i) { 0.9 } else { 0.1 };
        let out: Vec<SpeechSegment> = s.push(p).collect();
        if i == 24 {
            assert_eq!(out, [seg(3 * 512 - 480, 20 * 512 + 480)]);
        } else {
            assert_eq!(out, []);
        }
        let open = s.open_segment();
        if (3..24).contains(&i) {
            let open = open.unwrap();
            assert_eq!((open.onset, open.start), (3 * 512, 3 * 512 - 480));
            // Kept for sure once longer than 4000 samples whatever the stream's length:
            // the shortest stream ends one sample into window i.
            assert_eq!(open.confirmed, (i - 3) * 512 + 1 > 4000, "{i}");
        } else {
            assert_eq!(open, None);
        }
    }
    assert!(s.finish(40 * 512).unwrap().is_empty());
}

#[test]
fn released_iterator() {
    let mut r = Released::default();
    assert!(r.is_empty());
    assert_eq!(r.len(), 0);
    r.add(seg(1, 2));
    r.add(seg(3, 4));
    assert_eq!(r.len(), 2);
    assert_eq!(r.next(), Some(seg(1, 2)));
    assert_eq!(r.as_slice(), [seg(3, 4)]);
    assert_eq!(r.next(), Some(seg(3, 4)));
    assert_eq!(r.next(), None);
    assert!(r.is_empty());
}

#[test]
fn seconds_round_as_python() {
    // Python: round(samples / 16000, decimals).
    for (samples, decimals, want) in [
        (800, 1, 0.1),
        (4000, 1, 0.2),
        (2400, 1, 0.1),
        (5600, 1, 0.3),
        (8, 3, 0.001),
        (40, 3, 0.003),
        (24, 3, 0.002),
        (1, 4, 0.0001),
        (1, 7, 6.25e-05),
        (16001, 0, 1.0),
        (8000, 0, 0.0),
        (24000, 0, 2.0),
        (12345, 2, 0.77),
        (0, 1, 0.0),
        (159414, 1, 10.0),
        (159414, 3, 9.963),
    ] {
        let got = samples_to_seconds(samples, decimals);
        assert_eq!(got.to_bits(), f64::to_bits(want), "{samples} {decimals}");
    }
    for samples in [1, 7, 12345, 1 << 40] {
        let x = samples as f64 / 16000.0;
        assert_eq!(samples_to_seconds(samples, 30), x);
        assert_eq!(samples_to_seconds(samples, 22), x);
    }
    // The end is clamped to the stream's length in seconds.
    let s = seg(800, 16900);
    assert_eq!(s.seconds(16900, 1), (0.1, 16900.0 / 16000.0));
    assert_eq!(s.seconds(20000, 1), (0.1, 1.1));
}
