//! Registry of every compiled `neon_plan!` of this crate, for reports (`neon plan`) and
//! tests: the facts each plan's expansion states as associated consts, gathered in one
//! `'static` table ([`PLANS`]; no allocation, available without `std`).
//!
//! Sizes are bytes, at the upper bound of every symbolic dim (e.g. Moonshine's encoder at
//! 30 s of audio). Names are lowercase and dotted, family first
//! (`openwakeword.embedding`, `moonshine.decoder_layer`, `sanotts.decoder`).

use neon_runtime::workspace::MemoryRegion;

use crate::moonshine::{decoder, encoder};
use crate::openwakeword::{embedding, head, incremental};
use crate::sanotts::decoder as sanotts;
use crate::vad::network as vad;

/// What a compiled plan states about itself: its schedule length, workspace and memory map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanInfo {
    /// Registry name: lowercase, dotted, family first (`openwakeword.head.relu_128`).
    pub name: &'static str,
    /// One line: what the plan computes, with its input and output shapes.
    pub description: &'static str,
    /// Operator calls in the plan (`STEPS`); memory-map steps are `0..steps`.
    pub steps: usize,
    /// Workspace size in bytes (`WORKSPACE_BYTES`).
    pub workspace_bytes: usize,
    /// Lower bound in bytes (`LOWER_BOUND_BYTES`): the largest total of intermediates live
    /// at one step; no placement needs less.
    pub lower_bound_bytes: usize,
    /// The largest worker team `run_with` accepts (`MAX_WORKERS`; `usize::MAX`: any).
    pub max_workers: usize,
    /// Every value of the plan (`MEMORY_MAP`): workspace offset (`None` for tensors the
    /// caller owns: inputs, outputs, states), size in bytes, first and last live step.
    pub memory_map: &'static [MemoryRegion],
}

impl PlanInfo {
    /// `workspace_bytes / lower_bound_bytes` (1.0 when both are 0: a plan with no
    /// intermediates).
    pub fn ratio(&self) -> f64 {
        if self.lower_bound_bytes == 0 {
            if self.workspace_bytes == 0 {
                1.0
            } else {
                f64::INFINITY
            }
        } else {
            self.workspace_bytes as f64 / self.lower_bound_bytes as f64
        }
    }
}

/// A [`PlanInfo`] from the consts of plan type `$plan`.
macro_rules! plan_info {
    ($name:literal, $plan:ty, $description:literal) => {
        PlanInfo {
            name: $name,
            description: $description,
            steps: <$plan>::STEPS,
            workspace_bytes: <$plan>::WORKSPACE_BYTES,
            lower_bound_bytes: <$plan>::LOWER_BOUND_BYTES,
            max_workers: <$plan>::MAX_WORKERS,
            memory_map: <$plan>::MEMORY_MAP,
        }
    };
}

/// Every compiled plan of the crate, openWakeWord first, then Moonshine, then sanoTTS, then
/// Silero VAD, in pipeline order.
pub static PLANS: &[PlanInfo] = &[
    plan_info!(
        "openwakeword.embedding",
        embedding::EmbeddingNet,
        "speech-embedding CNN over a whole window: [1, 76, 32] mel -> [96, 1, 1]"
    ),
    plan_info!(
        "openwakeword.embedding_step",
        incremental::EmbeddingStep,
        "one incremental embedding step: [1, 10, 32] mel rows + states -> [96, 1, 1]"
    ),
    plan_info!(
        "openwakeword.head.layer_norm_128",
        head::LayerNormHead128,
        "LayerNorm wake-word head, H = 128: [1, 1536] -> [1, 1]"
    ),
    plan_info!(
        "openwakeword.head.layer_norm_64",
        head::LayerNormHead64,
        "LayerNorm wake-word head, H = 64: [1, 1536] -> [1, 1]"
    ),
    plan_info!(
        "openwakeword.head.layer_norm_32",
        head::LayerNormHead32,
        "LayerNorm wake-word head, H = 32: [1, 1536] -> [1, 1]"
    ),
    plan_info!(
        "openwakeword.head.relu_128",
        head::ReluHead128,
        "ReLU wake-word head, H = 128: [1, 1536] -> [1, 1]"
    ),
    plan_info!(
        "moonshine.encoder_stem",
        encoder::EncoderStem,
        "encoder conv stem: [1, samples <= 480000] audio -> [frames, 416]"
    ),
    plan_info!(
        "moonshine.encoder_layer",
        encoder::EncoderLayer,
        "one encoder transformer layer: [frames <= 1248, 416] -> [frames, 416]"
    ),
    plan_info!(
        "moonshine.encoder_norm",
        encoder::EncoderNorm,
        "encoder final LayerNorm: [frames <= 1248, 416] -> [frames, 416]"
    ),
    plan_info!(
        "moonshine.cross_kv",
        decoder::CrossKv,
        "one layer's cross-attention K and V: [memory <= 1248, 416] -> 2 x [memory, 416]"
    ),
    plan_info!(
        "moonshine.decoder_layer",
        decoder::DecoderLayer,
        "one decoder layer, one token, KV caches owned by the caller: [1, 416] -> [1, 416]"
    ),
    plan_info!(
        "moonshine.decoder_head",
        decoder::DecoderHead,
        "final LayerNorm and tied LM head: [1, 416] -> [1, 32768] logits"
    ),
    plan_info!(
        "sanotts.decoder",
        sanotts::DecoderNet,
        "vocoder network: [192, frames <= 2000] hidden -> [frames, 514] iSTFT frames"
    ),
    plan_info!(
        "silero_vad.window",
        vad::SileroVad,
        "one Silero VAD window: [1, 576] samples + [2, 128] LSTM state -> [1, 1] probability"
    ),
];

/// The registered plan called `name`, if any.
pub fn find(name: &str) -> Option<&'static PlanInfo> {
    PLANS.iter().find(|p| p.name == name)
}
