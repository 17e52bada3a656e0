//! A loaded microWakeWord model (feature `import`): its `.tflite` read by `neon-import` into a
//! run-time [`StreamPlan`] (shared, immutable), its name and JSON settings, and the detector
//! settings read from the file (N, the input and output quantisation).

use alloc::string::String;
use alloc::sync::Arc;

use neon_import::tflite::{parse_stream, stream_plan, DType};
use neon_import::Limits;
use neon_runtime::exec::stream::StreamPlan;

use super::config::MicroConfig;
use super::detector::{DetectorError, WordDetector, WordSettings};
use super::feeder::MAX_STEP_FRAMES;
use super::frontend::FEATURES;
use super::load::MicroModelFile;
use super::quantize::{InputQuantizer, OutputDequantizer};
use crate::error::Error;
use crate::openwakeword::custom::import_error;

/// The reading limits of a microWakeWord `.tflite`: input `[1, N, 40]` with N in
/// 1..=[`MAX_STEP_FRAMES`], at most 2^20 elements per tensor and 512 operators (the official
/// models have 30–40 operators and tensors of at most a few thousand elements).
pub const LIMITS: Limits = Limits {
    frame_width: FEATURES,
    max_frames: MAX_STEP_FRAMES,
    max_features: 1 << 20,
    max_layers: 512,
};

/// One microWakeWord model, ready to run: cheap to clone (the plan is shared).
#[derive(Clone, Debug)]
pub struct MicroWord {
    name: String,
    config: MicroConfig,
    plan: Arc<StreamPlan>,
    settings: WordSettings,
    /// A fresh detector with `settings` (checked at load).
    detector: WordDetector,
}

impl MicroWord {
    /// Reads the model `file` (an embedded official model or a user's `.tflite` with its
    /// JSON settings) and builds its plan.
    ///
    /// # Errors
    /// [`Error::Io`] when the `.tflite` cannot be read; [`Error::Weights`] naming the file, in
    /// one line, when it is not a microWakeWord streaming model this runtime supports (an
    /// operator or type it refuses, an output that is not one `uint8`, a quantisation or a
    /// JSON setting the detector refuses).
    pub fn load(file: &MicroModelFile) -> Result<MicroWord, Error> {
        let source = file.source();
        let bytes = file.tflite_bytes()?;
        let graph = parse_stream(&bytes, &LIMITS).map_err(|e| import_error(&source, e))?;
        let (input, output) = (&graph.input, &graph.output);
        if output.dtype != DType::U8 || output.len() != 1 {
            let why = "the model's output is not one uint8 value (a microWakeWord model's is)";
            return Err(Error::invalid_file(&source, why));
        }
        let refused = |e: DetectorError| Error::invalid_file(&source, alloc::format!("{e}"));
        let (Some(iq), Some(oq)) = (&input.quant, &output.quant) else {
            return Err(Error::invalid_file(&source, "the input or output has no quantisation"));
        };
        let (Some(&in_scale), Some(&in_zero), Some(&out_scale), Some(&out_zero)) =
            (iq.scale.first(), iq.zero_point.first(), oq.scale.first(), oq.zero_point.first())
        else {
            return Err(Error::invalid_file(&source, "the input or output has no scale"));
        };
        let zero = |z: i64| i32::try_from(z).map_err(|_| refused(DetectorError::InputScale));
        let settings = WordSettings {
            frames: input.shape[1],
            input: InputQuantizer::new(in_scale, zero(in_zero)?).map_err(refused)?,
            output: OutputDequantizer { scale: out_scale, zero_point: zero(out_zero)? },
            sliding_window_size: file.config.sliding_window_size,
            probability_cutoff: file.config.probability_cutoff,
        };
        // The detector's own checks (window, output scale), before any audio runs.
        let detector = WordDetector::new(&settings).map_err(refused)?;
        let plan = stream_plan(&graph).map_err(|e| import_error(&source, e))?;
        Ok(MicroWord {
            name: file.name.clone(),
            config: file.config.clone(),
            plan: Arc::new(plan),
            settings,
            detector,
        })
    }

    /// The model's name (its file stem: `okay_nabu`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model's JSON settings (or the defaults of a `.tflite` without JSON).
    pub fn config(&self) -> &MicroConfig {
        &self.config
    }

    /// The detector settings: N, the quantisation read from the file, window and cutoff.
    pub fn settings(&self) -> &WordSettings {
        &self.settings
    }

    /// A detector with this model's settings, no frame collected, an empty window.
    pub fn detector(&self) -> &WordDetector {
        &self.detector
    }

    /// The model's stream plan (shared by every detector of this word).
    pub fn plan(&self) -> &Arc<StreamPlan> {
        &self.plan
    }
}

/// Resolves `--model NAME|PATH`: an embedded official model's name (`okay_nabu`, see
/// [`super::builtin::names`]) or a user's model file, its `.tflite` or its `.json`
/// ([`super::load::load`]), and loads it ([`MicroWord::load`]).
///
/// # Errors
/// [`Error::Unknown`] for a name that is neither built in nor an existing file (listing the
/// built-in names); [`super::load::load`]'s and [`MicroWord::load`]'s errors otherwise.
pub fn resolve(name_or_path: &str) -> Result<MicroWord, Error> {
    if let Some(model) = super::builtin::get(name_or_path) {
        return MicroWord::load(&MicroModelFile::builtin(model));
    }
    let path = std::path::Path::new(name_or_path);
    if !path.exists() {
        let known = super::builtin::names().collect::<alloc::vec::Vec<_>>().join(", ");
        return Err(Error::Unknown {
            what: "microWakeWord model",
            name: alloc::format!(
                "`{name_or_path}` is neither a built-in model ({known}) nor a file"
            ),
        });
    }
    MicroWord::load(&super::load::load(path)?)
}
