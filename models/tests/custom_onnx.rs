//! `.onnx` wake-word heads (`openwakeword::custom::onnx`): the test heads and goldens of
//! `tools/openwakeword/onnx_heads.py` in `tests/data/oww_onnx/`.

use std::path::{Path, PathBuf};

use neon_models::error::WeightsSource;
use neon_models::openwakeword::custom::onnx::parse;
use neon_models::openwakeword::custom::{HeadGraph, Layer};
use neon_runtime::Portable;

/// Parses every `.onnx` in `$NEON_ONNX_HEADS` (a directory; e.g. community models not in the
/// repository) and prints its layers and the score of a seeded input. Skipped when unset.
#[test]
fn external_heads_parse() {
    let Ok(dir) = std::env::var("NEON_ONNX_HEADS") else { return };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    paths.sort();
    for p in paths {
        let bytes = std::fs::read(&p).unwrap();
        match parse(&bytes, &WeightsSource::File(p.clone())) {
            Ok(head) => {
                let x: Vec<f32> = (0..head.input_features())
                    .map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0)
                    .collect();
                let score = head
                    .build(&WeightsSource::File(p.clone()))
                    .unwrap()
                    .plans()
                    .unwrap()
                    .score::<Portable>(&x)
                    .unwrap();
                println!(
                    "{}: frames {} layers {} score {score}",
                    p.display(),
                    head.frames,
                    describe(&head)
                );
            }
            Err(e) => println!("{}: ERROR {e}", p.display()),
        }
    }
}

fn describe(head: &HeadGraph) -> String {
    head.layers
        .iter()
        .map(|l| match l {
            Layer::Dense { in_features, out_features, bias, .. } => {
                format!(
                    "dense {in_features}->{out_features}{}",
                    if bias.is_some() { "+b" } else { "" }
                )
            }
            Layer::LayerNorm { eps, gamma, beta, .. } => format!(
                "ln(eps {eps:e}{}{})",
                if gamma.is_some() { ", g" } else { "" },
                if beta.is_some() { ", b" } else { "" }
            ),
            Layer::Relu => "relu".into(),
            Layer::Sigmoid => "sigmoid".into(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[allow(dead_code)]
fn data_dir() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/oww_onnx"))
}
