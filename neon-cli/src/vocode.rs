//! `neon vocode`: acoustic hidden states → 16 kHz audio with the sanoTTS decoder, streamed
//! through a [`Vocoder`] so that memory stays bounded for any length; `--save-voice` writes
//! the built-in synthetic voice.

use std::path::{Path, PathBuf};

use clap::Args;
use neon_models::exec_plan::Family;
use neon_models::sanotts::files::{load_weights, HiddenStates};
use neon_models::sanotts::synthetic::{self, VOICE_SEED};
use neon_models::sanotts::vocoder::{Vocoder, MAX_BLOCK};
use neon_models::sanotts::{HIDDEN, HOP, SAMPLE_RATE};

use crate::output::Output;
use crate::{live, SessionArgs};

#[derive(Args)]
pub struct VocodeArgs {
    /// A safetensors file holding one tensor, `hidden`: f32 `[192, T]`, the acoustic
    /// model's hidden states, channel-first.
    #[arg(required_unless_present = "save_voice", value_name = "HIDDEN")]
    input: Option<PathBuf>,
    /// The WAV file to write: 16 kHz mono 32-bit float, exactly 128 samples per frame,
    /// not clipped.
    #[arg(short, long, value_name = "OUT", required_unless_present = "save_voice")]
    output: Option<PathBuf>,
    /// A voice file (safetensors with the tensor names of the sanoTTS nano voice; default:
    /// the built-in synthetic voice, seed 0x5A70, which gives noise-like audio).
    #[arg(long, value_name = "VOICE")]
    voice: Option<PathBuf>,
    /// Write the built-in synthetic voice to PATH (the documented voice-file format) and
    /// exit.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["input", "output", "voice", "threads"])]
    save_voice: Option<PathBuf>,
    /// Threads running the decoder (default: the cores the OS offers, at most 4; 1 runs on
    /// the calling thread). The audio is the same for any count.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    #[command(flatten)]
    session: SessionArgs,
}

/// Frames read and pushed at a time: one full window of the vocoder.
const CHUNK: usize = MAX_BLOCK;

/// Most samples a WAV file can hold as 32-bit floats: its RIFF sizes are 32-bit, so 4 GiB
/// of data less the header (64 bytes is more than hound writes), about 18.6 hours.
const WAV_MAX_SAMPLES: u64 = (u32::MAX as u64 - 64) / 4;

pub fn run(args: &VocodeArgs) -> Result<(), String> {
    let options = args.session.options(&[Family::SanoTts], None)?;
    if let Some(path) = &args.save_voice {
        return save_voice(path);
    }
    let (Some(input), Some(output)) = (&args.input, &args.output) else {
        return Err("give HIDDEN and -o OUT, or --save-voice PATH".into());
    };
    let team = crate::team(args.threads)?;
    // The input is checked before the voice is loaded.
    let mut hidden = HiddenStates::open(input).map_err(|e| e.to_string())?;
    let frames = hidden.frames();
    let samples = frames as u64 * HOP as u64;
    if samples > WAV_MAX_SAMPLES {
        return Err(format!(
            "{}: {frames} frames give {samples} samples, more than a WAV file holds \
             ({WAV_MAX_SAMPLES} 32-bit samples)",
            input.display()
        ));
    }
    let weights = match &args.voice {
        Some(path) => load_weights(path).map_err(|e| e.to_string())?,
        None => synthetic::prepared_voice().map_err(|e| e.to_string())?,
    };
    let mut vocoder = Vocoder::new(weights, &options).map_err(|e| e.to_string())?;
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: SAMPLE_RATE as u32,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let cannot_write = |e: hound::Error| format!("cannot write {}: {e}", output.display());
    let mut inputs = vec![input.as_path()];
    inputs.extend(args.voice.as_deref());
    let signals = live::Signals::catch()?;
    let (target, file) = Output::create(output, &inputs)?;
    let result = (|| {
        let mut wav =
            hound::WavWriter::new(std::io::BufWriter::new(file), spec).map_err(cannot_write)?;
        let mut chunk = vec![0.0f32; HIDDEN * CHUNK];
        let mut out =
            vec![0.0f32; vocoder.max_push_samples(CHUNK).max(vocoder.max_finish_samples())];
        let mut written = 0u64;
        for from in (0..frames).step_by(CHUNK) {
            if let Some(status) = signals.exit_status() {
                return Ok(Some(status));
            }
            let to = (from + CHUNK).min(frames);
            let chunk = &mut chunk[..HIDDEN * (to - from)];
            hidden.read(from, to, chunk).map_err(|e| e.to_string())?;
            let n =
                vocoder.push_in(&team, chunk, to - from, &mut out).map_err(|e| e.to_string())?;
            write(&mut wav, &out[..n]).map_err(cannot_write)?;
            written += n as u64;
        }
        let n = vocoder.finish_in(&team, &mut out).map_err(|e| e.to_string())?;
        write(&mut wav, &out[..n]).map_err(cannot_write)?;
        written += n as u64;
        debug_assert_eq!(written, samples);
        wav.finalize().map_err(cannot_write)?;
        Ok::<Option<i32>, String>(signals.exit_status())
    })();
    match result {
        Ok(None) => target.commit(),
        Ok(Some(status)) => {
            // Stopped: the output is left as it was.
            target.abandon();
            std::process::exit(status);
        }
        Err(e) => {
            target.abandon();
            Err(e)
        }
    }
}

fn write<W: std::io::Write + std::io::Seek>(
    wav: &mut hound::WavWriter<W>,
    samples: &[f32],
) -> Result<(), hound::Error> {
    for &s in samples {
        wav.write_sample(s)?;
    }
    Ok(())
}

/// Writes the built-in synthetic voice to `path`.
fn save_voice(path: &Path) -> Result<(), String> {
    let voice = synthetic::voice(VOICE_SEED).map_err(|e| e.to_string())?;
    let meta = synthetic::voice_metadata(VOICE_SEED);
    let extra: Vec<(&str, &str)> = meta.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let bytes = voice.to_safetensors(&extra).map_err(|e| e.to_string())?;
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
