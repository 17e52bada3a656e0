//! `neon transcribe` on real speech with noise-level silence around it. Every clip in
//! `models/speech/clips/` (real recordings, listed in `models/speech/SOURCES.md`, cut to the
//! speech) is padded with white noise at -54 dBFS RMS: 0 s before / 0.5 s after, 0/1.5,
//! 0.5/0.5, 1/0, 2/0 and 3/3 (the voice-activity issue's four, and two that a Home Assistant
//! satellite's leading and trailing silence easily reaches; without the VAD, 1.5 s or more
//! before speech lost the whole text of about half the clips). Each padded transcript (the default, `--vad on`) is scored against the
//! same clip's unpadded transcript with `--vad off` (the audio as given): over all padded
//! clips the word error rate must be at most 4%, and no padded clip may lose more than half
//! of its words (Moonshine alone may end its text at once on such audio). A per-clip table
//! goes to stderr, so CI logs show the numbers.
//!
//! Words: lowercased, split at every character other than a letter, a digit or an
//! apostrophe, apostrophes then dropped ("Ill-disposed," is "ill disposed"). WER: word-level
//! Levenshtein distance over the reference's word count, summed over the padded clips. A clip
//! "loses" the reference words outside the longest common word subsequence.
//!
//! The noise is Gaussian, from a fixed-seed generator per clip name and padding, so every run
//! hears the same audio. Audio goes to the program as raw s16le on stdin.
//!
//! Host only (see cli_wake.rs). Needs the converted model (`tools/moonshine/fetch.sh`).
#![cfg(not(target_arch = "aarch64"))]

mod common;

use std::path::{Path, PathBuf};

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const RATE: f64 = 16_000.0;
/// Seconds of noise before and after each clip.
const PADDINGS: [(f64, f64); 6] =
    [(0.0, 0.5), (0.0, 1.5), (0.5, 0.5), (1.0, 0.0), (2.0, 0.0), (3.0, 3.0)];
/// RMS level of the noise, dB relative to full scale (32768).
const NOISE_DBFS: f64 = -54.0;
/// Largest aggregate word error rate of the padded clips.
const MAX_WER: f64 = 0.04;

/// The committed clips, sorted by name.
fn clips() -> Vec<PathBuf> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../models")).join("speech/clips");
    common::files_with_extension(&dir, "wav", "clips")
}

/// A clip's samples (16 kHz mono 16-bit, as SOURCES.md promises).
fn read_clip(path: &Path) -> Vec<i16> {
    let mut r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(r.spec(), common::wav_spec(16_000, 1, 16, false), "{}", path.display());
    r.samples::<i16>().map(Result::unwrap).collect()
}

/// The generator's seed for one clip and padding: FNV-1a of the clip's name and the
/// padding's index (adding a clip changes no other clip's noise).
fn seed(name: &str, padding: usize) -> u64 {
    name.bytes()
        .chain([b'/', padding as u8])
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// `seconds` of Gaussian white noise at `NOISE_DBFS` RMS (Box-Muller).
fn noise(rng: &mut SmallRng, seconds: f64) -> Vec<i16> {
    let sigma = 32768.0 * 10f64.powf(NOISE_DBFS / 20.0);
    (0..(seconds * RATE).round() as usize)
        .map(|_| {
            let u1 = 1.0 - rng.gen::<f64>(); // (0, 1]: ln is finite
            let u2 = rng.gen::<f64>();
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            (sigma * z).round().clamp(-32768.0, 32767.0) as i16
        })
        .collect()
}

/// The text of `neon transcribe - [extra]` with `samples` piped as raw s16le.
fn transcribe(samples: &[i16], extra: &[&str]) -> String {
    let dir = common::moonshine::model_dir();
    let mut args = vec!["transcribe", "-", "--model-dir", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = common::neon_stdin(&args, &common::s16le(samples));
    assert!(
        out.status.success(),
        "neon transcribe - {}: {}",
        extra.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Lowercased words without punctuation.
fn words(text: &str) -> Vec<String> {
    let apostrophe = |c: char| c == '\'' || c == '\u{2019}';
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || apostrophe(c)))
        .map(|w| w.replace(apostrophe, ""))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Word-level Levenshtein distance (substitutions, deletions, insertions).
fn edit_distance(reference: &[String], hypothesis: &[String]) -> usize {
    let mut row: Vec<usize> = (0..=hypothesis.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, h) in hypothesis.iter().enumerate() {
            let cost = diagonal + usize::from(r != h);
            diagonal = row[j + 1];
            row[j + 1] = cost.min(row[j + 1] + 1).min(row[j] + 1);
        }
    }
    row[hypothesis.len()]
}

/// Length of the longest common subsequence of words: the reference words kept, in order.
fn kept_words(reference: &[String], hypothesis: &[String]) -> usize {
    let mut row = vec![0usize; hypothesis.len() + 1];
    for r in reference {
        let mut diagonal = 0;
        for (j, h) in hypothesis.iter().enumerate() {
            let kept = if r == h { diagonal + 1 } else { row[j + 1].max(row[j]) };
            diagonal = row[j + 1];
            row[j + 1] = kept;
        }
    }
    row[hypothesis.len()]
}

#[test]
fn scoring_helpers() {
    let w = words;
    assert_eq!(
        w("Ill-disposed, Mr. O'Neil's 10 MEN!"),
        ["ill", "disposed", "mr", "oneils", "10", "men"]
    );
    assert_eq!(edit_distance(&w("a b c d"), &w("a x c")), 2);
    assert_eq!(edit_distance(&w("a b"), &w("")), 2);
    assert_eq!(edit_distance(&w(""), &w("a b")), 2);
    assert_eq!(edit_distance(&w("a b c"), &w("x a b c")), 1);
    assert_eq!(kept_words(&w("a b c d e"), &w("a c x e")), 3);
    assert_eq!(kept_words(&w("a b c"), &w("")), 0);
    let mut rng = SmallRng::seed_from_u64(seed("x", 0));
    let n = noise(&mut rng, 2.0);
    assert_eq!(n.len(), 32_000);
    let rms = (n.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / n.len() as f64).sqrt();
    let dbfs = 20.0 * (rms / 32768.0).log10();
    assert!((dbfs - NOISE_DBFS).abs() < 0.2, "{dbfs} dBFS");
    assert_ne!(seed("x", 0), seed("x", 1));
}

#[test]
fn silence_around_speech_keeps_the_words() {
    let start = Instant::now();
    let (mut edits, mut reference_words, mut padded) = (0, 0, 0);
    let mut lost = Vec::new();
    let heads: Vec<String> = PADDINGS.iter().map(|(b, a)| format!("{b}/{a}")).collect();
    eprintln!(
        "edits against the unpadded (--vad off) transcript, per padding (s of noise before/after)"
    );
    eprintln!("{:<32} {:>6} {:>5}  {}", "clip", "s", "words", heads.join("  "));
    for path in clips() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let clip = read_clip(&path);
        let reference = transcribe(&clip, &["--vad", "off"]);
        let expected = words(&reference);
        assert!(expected.len() >= 3, "{name}: unpadded transcript {reference:?} is too short");
        let mut cells = Vec::new();
        let mut differing = Vec::new();
        for (k, &(before, after)) in PADDINGS.iter().enumerate() {
            let mut rng = SmallRng::seed_from_u64(seed(&name, k));
            let mut audio = noise(&mut rng, before);
            audio.extend_from_slice(&clip);
            audio.extend(noise(&mut rng, after));
            let text = transcribe(&audio, &[]);
            let got = words(&text);
            let e = edit_distance(&expected, &got);
            edits += e;
            reference_words += expected.len();
            padded += 1;
            cells.push(format!("{e:>w$}", w = heads[k].len()));
            if e > 0 {
                differing.push(format!("    {}: {text:?}", heads[k]));
            }
            if 2 * kept_words(&expected, &got) < expected.len() {
                lost.push(format!("{name} {}: {text:?} (unpadded: {reference:?})", heads[k]));
            }
        }
        let seconds = clip.len() as f64 / RATE;
        eprintln!("{name:<32} {seconds:>6.2} {:>5}  {}", expected.len(), cells.join("  "));
        eprintln!("    unpadded: {reference:?}");
        for line in differing {
            eprintln!("{line}");
        }
    }
    let wer = edits as f64 / reference_words as f64;
    eprintln!(
        "aggregate WER {edits}/{reference_words} = {:.1}% (at most {:.0}%); padded clips losing \
         more than half of their words: {} of {padded}; {:.1} s",
        100.0 * wer,
        100.0 * MAX_WER,
        lost.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        lost.is_empty(),
        "padded clips lost more than half of their words:\n{}",
        lost.join("\n")
    );
    assert!(wer <= MAX_WER, "aggregate WER {:.1}% is over {:.0}%", 100.0 * wer, 100.0 * MAX_WER);
}
