//! The decoder's two int8 paths (`moonshine_asr.int8`: `widening`, `dot`) on the ASR corpus:
//! word error rate against the reference texts and token agreement with ONNX Runtime. A
//! measurement, not a check: ignored by default (about 40 s on the host), run with
//!
//! ```text
//! cargo test -p neon-models --test moonshine_corpus -- --ignored --nocapture
//! ```
//!
//! (BENCHMARKS.md, "Moonshine decoder: the dot path"). `MOONSHINE_CORPUS=NAME`
//! keeps only the clips whose name contains `NAME` (e.g. one clip under qemu).
//!
//! The corpus: the 10 real speech clips of `models/speech/clips` (references:
//! `tools/wyoming_bench/references.tsv`, as `models/speech/SOURCES.md` gives them; ONNX
//! Runtime's greedy tokens: `models/speech/moonshine_ort_tokens.json`, written by
//! `tools/moonshine/corpus_tokens.py`) and the 4 golden clips of `models/moonshine/goldens`
//! (ONNX Runtime's tokens from the goldens; synthetic or reference-less, so token agreement
//! only). Each clip is transcribed greedily ([`Transcriber::transcribe`]) on each path, on
//! the backend `neon` picks.
//!
//! - WER: word edits (substitutions, insertions, deletions) over the reference's words,
//!   pooled over the clips; both texts lowercased, every character but letters and digits
//!   a space (as wyoming-bench normalises), so "10" against "ten" is an error on both paths.
//! - Token agreement: `1 - token edits / ONNX Runtime's tokens` (BOS and EOS included),
//!   pooled; and how many clips give ONNX Runtime's tokens exactly.

mod common;

use common::moonshine::*;
use neon_models::moonshine::transcriber::Transcriber;
use neon_runtime::ops::quant::QuantPath;
use neon_runtime::Backend;
use std::path::PathBuf;

const PATHS: [(QuantPath, &str); 2] = [(QuantPath::Widening, "widening"), (QuantPath::Dot, "dot")];

/// One clip: its samples, reference text (if any) and ONNX Runtime's tokens.
struct Clip {
    name: String,
    audio: Vec<f32>,
    reference: Option<String>,
    ort: Vec<u32>,
}

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(rel)
}

/// 16 kHz mono s16 samples / 32768, as `tools/moonshine` reads them.
fn read_wav(path: &std::path::Path) -> Vec<f32> {
    let mut r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!((r.spec().sample_rate, r.spec().channels), (16_000, 1), "{}", path.display());
    r.samples::<i16>().map(|s| f32::from(s.unwrap()) / 32768.0).collect()
}

/// The speech clips, then the golden ones.
fn corpus() -> Vec<Clip> {
    let refs = std::fs::read_to_string(repo("tools/wyoming_bench/references.tsv")).unwrap();
    let ort_path = repo("models/speech/moonshine_ort_tokens.json");
    let ort: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&ort_path).unwrap()).unwrap();
    let mut clips: Vec<Clip> = refs
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (name, text) = line.split_once('\t').expect("stem<TAB>text");
            let tokens = ort[name]["tokens"].as_array().unwrap_or_else(|| {
                panic!("{name}: not in {} (tools/moonshine/corpus_tokens.py)", ort_path.display())
            });
            Clip {
                name: name.to_string(),
                audio: read_wav(&repo(&format!("models/speech/clips/{name}.wav"))),
                reference: Some(text.to_string()),
                ort: tokens.iter().map(|t| t.as_u64().unwrap() as u32).collect(),
            }
        })
        .collect();
    clips.extend(goldens().into_iter().map(|g| Clip {
        name: g.name,
        audio: g.audio,
        reference: None,
        ort: g.tokens,
    }));
    let only = std::env::var("MOONSHINE_CORPUS").unwrap_or_default();
    clips.retain(|c| c.name.contains(&only));
    assert!(!clips.is_empty(), "no clip matches MOONSHINE_CORPUS={only:?}");
    clips
}

/// Levenshtein distance: the fewest substitutions, insertions and deletions from `a` to `b`.
fn edits<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let next = (diag + usize::from(x != y)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Lowercase words, every character but letters and digits a separator.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Sums over the clips of one path.
#[derive(Default)]
struct Totals {
    word_edits: usize,
    words: usize,
    token_edits: usize,
    tokens: usize,
    identical: usize,
    clips: usize,
}

#[test]
#[ignore = "a measurement (BENCHMARKS.md): run with --ignored --nocapture"]
fn decoder_paths_on_the_asr_corpus() {
    on_best_backend!(measure);
}

fn measure<B: Backend>() {
    let mut t: Transcriber = transcriber::<B>();
    let mut totals: [Totals; 2] = Default::default();
    println!("| clip | words | WER widening | WER dot | ORT tokens | token edits widening | token edits dot |");
    println!("|---|---|---|---|---|---|---|");
    for clip in corpus() {
        let mut cells = Vec::new();
        let mut token_cells = Vec::new();
        for ((path, name), total) in PATHS.iter().zip(&mut totals) {
            t.set_decoder_path(*path);
            let got = t.transcribe(&clip.audio).unwrap();
            let e = edits(&got.tokens, &clip.ort);
            total.token_edits += e;
            total.tokens += clip.ort.len();
            total.identical += usize::from(e == 0);
            total.clips += 1;
            token_cells.push(e.to_string());
            if let Some(reference) = &clip.reference {
                let (want, have) = (words(reference), words(&got.text));
                let w = edits(&have, &want);
                total.word_edits += w;
                total.words += want.len();
                cells.push(format!("{:.1}%", 100.0 * w as f64 / want.len() as f64));
            }
            eprintln!("{} ({name}): {:?}", clip.name, got.text);
        }
        let words = clip.reference.as_deref().map_or(0, |r| words(r).len());
        if cells.is_empty() {
            cells = vec!["-".into(), "-".into()];
        }
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            clip.name,
            if words == 0 { "-".to_string() } else { words.to_string() },
            cells[0],
            cells[1],
            clip.ort.len(),
            token_cells[0],
            token_cells[1]
        );
    }
    for ((_, name), s) in PATHS.iter().zip(&totals) {
        println!(
            "{name}: WER {:.2}% ({} edits / {} words); token agreement with ONNX Runtime \
             {:.2}% ({} edits / {} tokens); {} of {} clips give its tokens exactly",
            100.0 * s.word_edits as f64 / s.words.max(1) as f64,
            s.word_edits,
            s.words,
            100.0 * (1.0 - s.token_edits as f64 / s.tokens as f64),
            s.token_edits,
            s.tokens,
            s.identical,
            s.clips
        );
    }
}

#[test]
fn edit_distance() {
    assert_eq!(edits(b"kitten", b"sitting"), 3);
    assert_eq!(edits::<u8>(b"", b"abc"), 3);
    assert_eq!(edits(b"abc", b"abc"), 0);
    assert_eq!(words("Cold-hearted, Mr. X!"), ["cold", "hearted", "mr", "x"]);
}
