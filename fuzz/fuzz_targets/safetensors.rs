//! Weights files (`TensorFile::parse`, then loading as a wake-word head, the speech
//! embedding, Moonshine and a sanoTTS voice, folded and packed): any bytes give prepared
//! weights or a clean error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neon_models::error::WeightsSource;
use neon_models::moonshine::load::MoonshineWeights;
use neon_models::openwakeword::embedding::EmbeddingNetWeights;
use neon_models::openwakeword::head::HeadNet;
use neon_models::openwakeword::names::{STAGE1, STAGE2};
use neon_models::sanotts::load::VoiceWeights;
use neon_models::weights::TensorFile;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = TensorFile::parse(data, WeightsSource::Embedded("fuzz")) else { return };
    let _ = HeadNet::load(&file, &STAGE1);
    let _ = HeadNet::load(&file, &STAGE2);
    let _ = EmbeddingNetWeights::load(&file);
    let _ = MoonshineWeights::load(&file);
    let _ = VoiceWeights::load(&file);
});
