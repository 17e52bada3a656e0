//! Speech segments against silero-vad itself: `models/vad/goldens/segments.json` holds the
//! output of silero-vad 6.2.3's `get_speech_timestamps` (run with PyTorch by
//! `tools/silero_vad/segments_reference.py`) on synthetic, random and real-clip probability
//! sequences. Every case must give identical segments fed one probability at a time and as
//! one array, and identical seconds at each time resolution the reference used.

use neon_models::vad::segments::{
    samples_to_seconds, speech_segments, SegmentConfig, SpeechSegment, SpeechSegmenter,
};
use serde_json::Value;
use std::collections::HashMap;

fn reference() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vad/goldens/segments.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The case's parameters (silero-vad's keyword names; null for the defaults of
/// `neg_threshold` and for an infinite `max_speech_duration_s`).
fn config(params: &Value) -> SegmentConfig {
    let ms = |key: &str| u32::try_from(params[key].as_u64().unwrap()).unwrap();
    SegmentConfig {
        threshold: params["threshold"].as_f64().unwrap(),
        neg_threshold: params["neg_threshold"].as_f64(),
        min_speech_duration_ms: ms("min_speech_duration_ms"),
        min_silence_duration_ms: ms("min_silence_duration_ms"),
        speech_pad_ms: ms("speech_pad_ms"),
        max_speech_duration_s: params["max_speech_duration_s"].as_f64().unwrap_or(f64::INFINITY),
        min_silence_at_max_speech_ms: ms("min_silence_at_max_speech"),
        use_max_poss_sil_at_max_speech: params["use_max_poss_sil_at_max_speech"].as_bool().unwrap(),
    }
}

fn probabilities(values: &Value) -> Vec<f32> {
    values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| if v.is_null() { f32::NAN } else { v.as_f64().unwrap() as f32 })
        .collect()
}

fn pairs(values: &Value) -> Vec<(Value, Value)> {
    values.as_array().unwrap().iter().map(|p| (p[0].clone(), p[1].clone())).collect()
}

#[test]
fn segments_match_silero_vad() {
    let reference = reference();
    assert_eq!(reference["window"], 512);
    assert_eq!(reference["sample_rate"], 16000);
    let cases = reference["cases"].as_array().unwrap();
    let mut by_name: HashMap<&str, Vec<f32>> = HashMap::new();
    let mut checked_seconds = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let probs = match case.get("probabilities") {
            Some(values) => probabilities(values),
            None => by_name[case["probabilities_from"].as_str().unwrap()].clone(),
        };
        let total = case["total_samples"].as_u64().unwrap();
        let config = config(&case["params"]);
        let want: Vec<SpeechSegment> = pairs(&case["segments"])
            .into_iter()
            .map(|(s, e)| SpeechSegment { start: s.as_u64().unwrap(), end: e.as_u64().unwrap() })
            .collect();

        // One probability at a time.
        let mut segmenter = SpeechSegmenter::new(&config).unwrap();
        let mut streamed = Vec::new();
        for &p in &probs {
            streamed.extend(segmenter.push(p));
        }
        streamed.extend(segmenter.finish(total).unwrap());
        assert_eq!(streamed, want, "{name}: streamed");

        // One array.
        let whole = speech_segments(&probs, total, &config).unwrap();
        assert_eq!(whole, want, "{name}: whole array");

        // Seconds (return_seconds=True), bit for bit.
        for (resolution, expected) in case["seconds"].as_object().unwrap() {
            let resolution: u32 = resolution.parse().unwrap();
            let expected = pairs(expected);
            assert_eq!(expected.len(), want.len(), "{name}");
            for (segment, (s, e)) in want.iter().zip(expected) {
                let (start, end) = segment.seconds(total, resolution);
                assert_eq!(start.to_bits(), s.as_f64().unwrap().to_bits(), "{name} {resolution}");
                assert_eq!(end.to_bits(), e.as_f64().unwrap().to_bits(), "{name} {resolution}");
                checked_seconds += 1;
            }
        }
        by_name.insert(name, probs);
    }
    // The reference is complete: the synthetic cases, the random ones and the real clips.
    for name in [
        "empty",
        "hysteresis",
        "nan_probabilities",
        "close_segments_share_the_gap",
        "speech_to_the_end_partial_window",
        "max_speech_at_silence",
        "max_speech_no_silence",
        "max_speech_legacy",
        "speech_pad_0",
        "random_0",
        "clip_alexa",
        "clip_beckett",
    ] {
        assert!(by_name.contains_key(name), "case {name} missing");
    }
    assert!(cases.len() >= 60, "{} cases", cases.len());
    assert!(checked_seconds > 100, "{checked_seconds}");
}

#[test]
fn seconds_round_as_python() {
    let reference = reference();
    let table = reference["rounding"].as_array().unwrap();
    assert!(table.len() > 100);
    for row in table {
        let samples = row[0].as_u64().unwrap();
        let decimals = u32::try_from(row[1].as_u64().unwrap()).unwrap();
        let want = row[2].as_f64().unwrap();
        assert_eq!(
            samples_to_seconds(samples, decimals).to_bits(),
            want.to_bits(),
            "round({samples} / 16000, {decimals}) = {want}"
        );
    }
}
