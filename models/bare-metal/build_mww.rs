//! The microWakeWord half of the build script: each official model's `.tflite` read into a
//! run-time `StreamPlan` by the models crate's own loader (`MicroWord::load`: neon-import's
//! `parse_stream` and `stream_plan`, the detector settings read from the file and its JSON),
//! compiled to Rust by `StreamPlan::to_rust` (`mww_<model>.rs`: weights, sizes, `Plan`), with
//! the detector settings and that model's goldens appended; and the test clip with the
//! goldens' features (`mww_testdata.rs`). The goldens are pymicro-wakeword 2.5.0's on the
//! `okay_nabu` clip (`models/microwakeword/goldens/okay_nabu.safetensors`, written by
//! `tools/microwakeword/goldens.py`).

use std::fmt::Write as _;
use std::path::Path;

use neon_models::microwakeword::load::load;
use neon_models::microwakeword::word::MicroWord;
use safetensors::{Dtype, SafeTensors};

/// The models compiled into the program (the four official ones).
pub const MODELS: [&str; 4] = ["okay_nabu", "hey_jarvis", "alexa", "hey_mycroft"];
/// The golden clip.
const CLIP: &str = "okay_nabu";

/// Writes `mww_<model>.rs` for every model of [`MODELS`] and `mww_testdata.rs` into `out`.
pub fn generate(models: &Path, out: &Path) {
    let golden = super::read(&models.join(format!("microwakeword/goldens/{CLIP}.safetensors")));
    let st = SafeTensors::deserialize(&golden).expect("golden safetensors");
    let (_, meta) = SafeTensors::read_metadata(&golden).expect("golden metadata");
    let meta = meta.metadata().clone().expect("golden metadata");
    let mut summary = String::new();
    for name in MODELS {
        let json = models.join(format!("microwakeword/{name}.json"));
        println!("cargo:rerun-if-changed={}", json.display());
        println!("cargo:rerun-if-changed={}", json.with_extension("tflite").display());
        let file = load(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        let word = MicroWord::load(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut src = word.plan().to_rust().unwrap_or_else(|e| panic!("{name}: {e}"));
        let s = word.settings();
        let arena = word.config().tensor_arena_size.unwrap_or(0);
        let _ = writeln!(
            src,
            "\n/// The detector settings and the goldens (build.rs).\npub mod word {{"
        );
        let _ = writeln!(
            src,
            "    use neon_models::microwakeword::quantize::{{InputQuantizer, OutputDequantizer}};"
        );
        let _ =
            writeln!(src, "    /// N, frames a step.\n    pub const FRAMES: usize = {};", s.frames);
        let _ = writeln!(src, "    /// The input quantisation.\n    pub const INPUT: InputQuantizer = InputQuantizer {{ scale: {:?}, zero_point: {} }};", s.input.scale, s.input.zero_point);
        let _ = writeln!(src, "    /// The output quantisation.\n    pub const OUTPUT: OutputDequantizer = OutputDequantizer {{ scale: {:?}, zero_point: {} }};", s.output.scale, s.output.zero_point);
        let _ = writeln!(
            src,
            "    /// `sliding_window_size`.\n    pub const WINDOW: usize = {};",
            s.sliding_window_size
        );
        let _ = writeln!(
            src,
            "    /// `probability_cutoff`.\n    pub const CUTOFF: f64 = {:?};",
            s.probability_cutoff
        );
        let _ = writeln!(src, "    /// The JSON's `tensor_arena_size` (TFLite Micro's arena).\n    pub const TENSOR_ARENA_SIZE: u64 = {arena};");
        let steps = st.tensor(&format!("output.{name}")).expect("golden output").shape()[0];
        let output = tensor(&st, &format!("output.{name}"), Dtype::U8, &[steps]);
        let prob: Vec<f64> = tensor(&st, &format!("prob.{name}"), Dtype::F64, &[steps])
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        let detect = tensor(&st, &format!("detect.{name}"), Dtype::U8, &[steps]);
        array(&mut src, "GOLDEN_OUTPUT", "u8", output.iter().map(|v| format!("{v}")));
        array(&mut src, "GOLDEN_PROB", "f64", prob.iter().map(|v| format!("{v:?}")));
        array(&mut src, "GOLDEN_DETECT", "u8", detect.iter().map(|v| format!("{v}")));
        src.push_str("}\n");
        write(&out.join(format!("mww_{name}.rs")), &src);
        let plan = word.plan();
        let _ = writeln!(
            summary,
            "{name}: steps {}, workspace {} bytes, lower bound {}, state {} bytes, tensor_arena_size {arena}",
            plan.steps(),
            plan.workspace_bytes(),
            plan.lower_bound(),
            plan.state().bytes(),
        );
    }
    // The clip, padded as the goldens were recorded, and the frontend's golden features.
    let clip = super::read_wav(&models.join(format!("tests/data/microwakeword/{CLIP}.wav")));
    let pad: usize = meta["padding"].split(' ').next().unwrap().parse().unwrap();
    let frames = st.tensor("features").unwrap().shape()[0];
    let features = tensor(&st, "features", Dtype::U16, &[frames, 40]);
    let mut src = String::from("// Generated by build.rs: do not edit.\n");
    let _ = writeln!(src, "/// Zero samples after the clip.\npub const PADDING: usize = {pad};");
    array(&mut src, "CLIP", "i16", clip.iter().map(|v| format!("{v}")));
    let raw = features.chunks_exact(2).map(|b| format!("{}", u16::from_le_bytes([b[0], b[1]])));
    array(&mut src, "GOLDEN_FEATURES", "u16", raw);
    write(&out.join("mww_testdata.rs"), &src);
    write(&out.join("mww_summary.txt"), &summary);
}

/// The bytes of golden tensor `name`, checked to be `dtype` of `shape`.
fn tensor<'a>(st: &'a SafeTensors, name: &str, dtype: Dtype, shape: &[usize]) -> &'a [u8] {
    let t = st.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!((t.dtype(), t.shape()), (dtype, shape), "{name}: dtype and shape");
    t.data()
}

/// Writes `pub static NAME: [ty; N] = [..];` of the literals `items`.
fn array(src: &mut String, name: &str, ty: &str, items: impl ExactSizeIterator<Item = String>) {
    let _ = write!(
        src,
        "    /// Golden data (build.rs).\n    pub static {name}: [{ty}; {}] = [",
        items.len()
    );
    for (i, x) in items.enumerate() {
        let sep = if i % 16 == 15 { ",\n" } else { ", " };
        let _ = write!(src, "{x}{sep}");
    }
    src.push_str("];\n");
}

fn write(path: &Path, src: &str) {
    std::fs::write(path, src).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
