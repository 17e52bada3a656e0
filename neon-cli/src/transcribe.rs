//! `neon transcribe`: speech recognition with Moonshine base-en on a WAV file or raw audio
//! from stdin.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use neon_models::exec_plan::Family;
use neon_models::moonshine::files::{paths, DEFAULT_DIR, FETCH_COMMAND};
use neon_models::moonshine::segment::{Segment, Segmenter};
use neon_models::moonshine::transcriber::{token_budget, MoonshineModel, Transcriber};
use neon_models::moonshine::{EOS, MAX_SAMPLES, SAMPLE_RATE};
use neon_models::vad::windows::SpeechWindows;
use neon_runtime::Team;
use serde_json::json;

use crate::input::Source;
use crate::{line, live, SessionArgs, Warnings};

/// RMS (full scale 1) above which a segment that decodes to nothing gets a warning: about
/// -50 dBFS, well above the noise floor of a quiet recording.
const SPEECH_RMS: f64 = 3e-3;

#[derive(Args)]
pub struct TranscribeArgs {
    /// An audio file (WAV of any layout, FLAC, Ogg/Vorbis; any channel count and rate;
    /// also a FIFO), or `-` for stdin: decoded the same way when it starts with a file
    /// header, else raw s16le 16 kHz mono. A file's transcript is printed on one line at
    /// the end; stdin's is printed as it is decoded, one line per piece (a VAD window), and
    /// SIGINT or SIGTERM decodes and prints the piece still open, then exits 130 or 143.
    input: String,
    /// Directory with `base-en.safetensors` and `tokenizer.bin` (default: `models/moonshine`
    /// in the current directory, else next to the program's repository checkout).
    #[arg(long, value_name = "DIR")]
    model_dir: Option<PathBuf>,
    /// Print one JSON object: {"text", "tokens", "audio_s", "encoder_ms", "decode_ms"}; on
    /// stdin one per piece as it is decoded: {"text", "tokens", "start_s", "end_s",
    /// "encoder_ms", "decode_ms"}.
    #[arg(long)]
    json: bool,
    /// How the decoder's int8 GEMVs run: `auto` (the default: `dot` on the NEON kernels of
    /// ARM CPUs, `widening` elsewhere), `widening` (exact products) or `dot` (activations
    /// quantised to int8 per block of 32; `sdot` on ARM CPUs with dotprod, `smull` and
    /// `sadalp` on the others, the same bits).
    /// Shorthand for `--session-option moonshine_asr.int8=MODE`.
    #[arg(long, value_name = "MODE", value_parser = ["auto", "widening", "dot"])]
    int8: Option<String>,
    /// Threads running the encoder and each decoder step (default: the cores the OS
    /// offers, at most 4; 1 runs on the calling thread). The transcript is the same for any
    /// count.
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// `on` (default): decode only the speech that Silero VAD finds, in windows from the
    /// first speech onset to the last offset (100 ms more on each side; speech less than
    /// 2 s apart shares a window), so silence around speech does not empty the text.
    /// `off`: decode the audio as given (cut at quiet points every 30 s).
    #[arg(long, value_name = "MODE", default_value = "on", value_parser = ["on", "off"])]
    vad: String,
    #[command(flatten)]
    session: SessionArgs,
}

/// The model directory: the one given, else `models/moonshine` under the current directory,
/// else under an ancestor of the program (`target/release/neon` in a checkout).
pub(crate) fn model_dir(given: Option<&Path>) -> PathBuf {
    if let Some(dir) = given {
        return dir.to_path_buf();
    }
    let here = PathBuf::from(DEFAULT_DIR);
    if here.is_dir() {
        return here;
    }
    let exe = std::env::current_exe().ok();
    let found =
        exe.iter().flat_map(|p| p.ancestors()).map(|a| a.join(DEFAULT_DIR)).find(|d| d.is_dir());
    found.unwrap_or(here)
}

pub fn run(args: &TranscribeArgs) -> Result<(), String> {
    let shorthand = args.int8.as_ref().map(|mode| ("--int8", format!("moonshine_asr.int8={mode}")));
    let families: &[Family] = if args.vad == "on" {
        &[Family::MoonshineAsr, Family::SileroVad]
    } else {
        &[Family::MoonshineAsr]
    };
    let options = args.session.options(families, shorthand)?;
    let team = crate::team(args.threads)?;
    let dir = model_dir(args.model_dir.as_deref());
    let (weights, tokenizer) = paths(&dir);
    // Missing files get the fetch hint; anything else there (a directory, a device, a file
    // over the size limit) is reported by the loader ([`neon_models::files::read_limited`]).
    for (path, what) in [(&tokenizer, "tokenizer"), (&weights, "weights")] {
        if !path.exists() {
            return Err(format!(
                "no Moonshine {what} at {}: run `{FETCH_COMMAND}` (downloads moonshine-cpp \
                 0.1.4 and converts it), or pass --model-dir",
                path.display()
            ));
        }
    }
    // The input's header is checked before the weights are loaded.
    let source = Source::open(&args.input)?;
    // Stdin is a live stream: from here on SIGINT and SIGTERM end it with what it gave.
    let signals = if args.input == "-" { Some(live::Signals::catch()?) } else { None };
    let model = MoonshineModel::open(&dir).map_err(|e| e.to_string())?;
    let model = Transcriber::new(model, &options).map_err(|e| e.to_string())?;
    let cutter = if args.vad == "on" {
        Cutter::Speech(Box::new(crate::vad::speech_windows(&options)?))
    } else {
        Cutter::Quiet(Segmenter::new(MAX_SAMPLES))
    };
    transcribe(args, (model, &team), source, cutter, signals)
}

/// How the input is cut into the pieces Moonshine decodes.
enum Cutter {
    /// Decode windows around the speech Silero VAD finds (`--vad on`).
    Speech(Box<SpeechWindows>),
    /// Everything, cut at quiet points every 30 s (`--vad off`).
    Quiet(Segmenter),
}

impl Cutter {
    fn push(&mut self, samples: &[f32]) -> Result<(), String> {
        match self {
            Cutter::Speech(w) => w.push(samples).map_err(|e| e.to_string()),
            Cutter::Quiet(s) => {
                s.push(samples);
                Ok(())
            }
        }
    }

    fn pop(&mut self) -> Option<Segment> {
        match self {
            Cutter::Speech(w) => w.pop(),
            Cutter::Quiet(s) => s.pop(),
        }
    }

    /// The pieces left at the end of the input.
    fn finish(&mut self) -> Result<Vec<Segment>, String> {
        match self {
            Cutter::Speech(w) => {
                w.finish().map_err(|e| e.to_string())?;
                Ok(std::iter::from_fn(|| w.pop()).collect())
            }
            Cutter::Quiet(s) => Ok(s.finish()),
        }
    }
}

/// What the segments gave so far.
#[derive(Default)]
struct Transcript {
    tokens: Vec<u32>,
    texts: Vec<String>,
    encoder_s: f64,
    decode_s: f64,
    segment_tokens: Vec<u32>,
    /// Dropped (summing up repeated warnings) before the text is printed.
    warnings: Warnings,
}

/// How the text is printed.
#[derive(Clone, Copy)]
enum Print {
    /// A file: the whole transcript on one line at the end (or one `--json` object).
    Whole { json: bool },
    /// Stdin: each piece as soon as it is decoded, text on its own line (pieces without
    /// text print nothing; one empty line at the end if no piece had text), or with `--json`
    /// one object per piece.
    Pieces { json: bool },
}

/// The input's pieces as they are cut and decoded (at most about 30 s of audio held, see
/// [`Segmenter`] and [`SpeechWindows`]).
struct Decoder<'a> {
    model: Transcriber,
    team: &'a Team,
    cutter: Cutter,
    t: Transcript,
    print: Print,
    /// Pieces decoded, and printed ([`Print::Pieces`]).
    decoded: usize,
    printed: usize,
    /// Samples fed.
    samples: u64,
    progress: Option<ProgressBar>,
}

impl Decoder<'_> {
    /// Feeds the next samples; decodes (and prints) each piece they complete.
    fn push(&mut self, samples: &[f32]) -> Result<(), String> {
        self.samples += samples.len() as u64;
        self.cutter.push(samples)?;
        while let Some(segment) = self.cutter.pop() {
            self.decode(&segment)?;
            if let Some(bar) = &self.progress {
                bar.set_position(
                    (segment.start + segment.samples.len() as u64) / SAMPLE_RATE as u64,
                );
            }
        }
        Ok(())
    }

    /// The end of the input (or a signal): the pieces left, held audio included.
    fn finish(&mut self) -> Result<(), String> {
        if self.samples == 0 {
            return Ok(());
        }
        for segment in self.cutter.finish()? {
            self.decode(&segment)?;
        }
        Ok(())
    }

    fn decode(&mut self, segment: &Segment) -> Result<(), String> {
        let (text, encoder_s, decode_s) = self.t.segment(&mut self.model, self.team, segment)?;
        self.decoded += 1;
        let Print::Pieces { json } = self.print else { return Ok(()) };
        // Printed now: a live stream keeps no history.
        self.t.texts.clear();
        self.t.tokens.clear();
        let at = |i: u64| i as f64 / SAMPLE_RATE as f64;
        if json {
            let value = json!({
                "text": text,
                "tokens": self.t.segment_tokens,
                "start_s": at(segment.start),
                "end_s": at(segment.start + segment.samples.len() as u64),
                "encoder_ms": encoder_s * 1e3,
                "decode_ms": decode_s * 1e3,
            });
            line(format_args!("{value}"))?;
        } else if !text.is_empty() {
            line(format_args!("{text}"))?;
        } else {
            return Ok(());
        }
        self.printed += 1;
        Ok(())
    }
}

/// A progress bar on stderr for a file longer than one segment, when stderr is a terminal.
fn progress(source: &Source) -> Result<Option<ProgressBar>, String> {
    match source.declared_seconds() {
        Some(s)
            if s > MAX_SAMPLES as f64 / SAMPLE_RATE as f64 && std::io::stderr().is_terminal() =>
        {
            let bar = ProgressBar::new(s.ceil() as u64);
            let style = ProgressStyle::with_template("{bar:30} {pos}/{len} s of audio, {elapsed}")
                .map_err(|e| e.to_string())?;
            bar.set_style(style);
            Ok(Some(bar))
        }
        _ => Ok(None),
    }
}

/// Transcribes the input piece by piece as it is read and prints the text. With `signals`
/// (stdin), the input is read on a thread of its own ([`live`]) and each piece is printed
/// when decoded; SIGINT or SIGTERM ends it as the end of the input would (the open window
/// is decoded and printed), then exits with 130 or 143.
fn transcribe(
    args: &TranscribeArgs,
    (model, team): (Transcriber, &Team),
    mut source: Source,
    cutter: Cutter,
    signals: Option<live::Signals>,
) -> Result<(), String> {
    let print = match signals {
        Some(_) => Print::Pieces { json: args.json },
        None => Print::Whole { json: args.json },
    };
    let progress = progress(&source)?;
    let name = source.name.clone();
    let mut d = Decoder {
        model,
        team,
        cutter,
        t: Transcript::default(),
        print,
        decoded: 0,
        printed: 0,
        samples: 0,
        progress,
    };
    let (source, signal) = match signals {
        None => {
            source.for_each_piece(|piece| d.push(piece))?;
            (Some(source), None)
        }
        Some(signals) => match live::feed(live::read(move || Ok(source)), &signals, |p| d.push(p))?
        {
            live::Ended::Input(source) => (Some(*source), None),
            live::Ended::Signal(status) => (None, Some(status)),
        },
    };
    if let Some(source) = source.as_ref().filter(|s| s.samples() == 0) {
        return Err(source.no_samples());
    }
    d.finish()?;
    if matches!(d.cutter, Cutter::Speech(_)) && d.decoded == 0 && d.samples > 0 {
        crate::warn(format_args!(
            "{name}: no speech found by the voice-activity detector (nothing decoded; --vad off \
             decodes the audio as given)"
        ));
    }
    // indicatif ignores its own write errors (it draws only when stderr is a terminal).
    if let Some(bar) = d.progress.take() {
        bar.finish_and_clear();
    }
    if let Some(source) = &source {
        source.warn_clipping();
    }
    let Decoder { t, printed, .. } = d;
    let Transcript { tokens, texts, encoder_s, decode_s, warnings, .. } = t;
    drop(warnings);
    match print {
        Print::Whole { json: true } => {
            let value = json!({
                "text": texts.join(" "),
                "tokens": tokens,
                "audio_s": source.as_ref().map_or(0.0, Source::seconds),
                "encoder_ms": encoder_s * 1e3,
                "decode_ms": decode_s * 1e3,
            });
            line(format_args!("{value}"))?;
        }
        Print::Whole { json: false } => line(format_args!("{}", texts.join(" ")))?,
        // The empty transcript, as a file without speech gives.
        Print::Pieces { json: false } if printed == 0 => line(format_args!(""))?,
        Print::Pieces { .. } => {}
    }
    if let Some(status) = signal {
        std::process::exit(status);
    }
    Ok(())
}

impl Transcript {
    /// Encodes and decodes one segment, warning when its token budget ran out or it gave no
    /// text although it is not silent: its text and the seconds its encoder and decoder
    /// took (its tokens are left in `segment_tokens`).
    fn segment(
        &mut self,
        model: &mut Transcriber,
        team: &Team,
        segment: &Segment,
    ) -> Result<(String, f64, f64), String> {
        let audio = &segment.samples[..];
        let start = segment.start as usize;

        let range = start..start + audio.len();
        let t0 = Instant::now();
        model.encode_in(team, audio).map_err(|e| e.to_string())?;
        let t1 = Instant::now();
        let budget = token_budget(audio.len());
        let segment_tokens = &mut self.segment_tokens;
        model.greedy_in(team, budget, segment_tokens).map_err(|e| e.to_string())?;
        let t2 = Instant::now();
        let (encoder_s, decode_s) = ((t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64());
        self.encoder_s += encoder_s;
        self.decode_s += decode_s;
        let text = model.tokenizer().decode(segment_tokens);
        let at = |i: usize| i as f64 / SAMPLE_RATE as f64;
        if segment_tokens.last() != Some(&EOS) {
            self.warnings.warn(
                "the token budget ran out before the end of speech",
                format_args!(
                    "{:.2}-{:.2} s: the token budget ({} tokens for {:.2} s) ran out \
                 before the end of speech; the text of this segment may be cut short",
                    at(range.start),
                    at(range.end),
                    budget,
                    at(audio.len())
                ),
            );
        }
        let rms = (audio.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>()
            / audio.len().max(1) as f64)
            .sqrt();
        if text.is_empty() && rms > SPEECH_RMS {
            self.warnings.warn(
                "a segment gave no text although the audio is not silent",
                format_args!(
                    "{:.2}-{:.2} s: no text although the audio is not silent \
                 (Moonshine sometimes ends at once; ONNX Runtime does the same on these samples)",
                    at(range.start),
                    at(range.end)
                ),
            );
        }
        if !text.is_empty() {
            self.texts.push(text.clone());
        }
        self.tokens.extend_from_slice(segment_tokens);
        Ok((text, encoder_s, decode_s))
    }
}
