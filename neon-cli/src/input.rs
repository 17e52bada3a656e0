//! The commands' audio input, read piece by piece in constant memory: a file of any format
//! [`AudioStream`] decodes (also FIFOs and `<(...)`), or stdin (`-`): decoded the same way
//! when it starts with a RIFF, fLaC or OggS header ([`is_container`]), else raw s16le
//! 16 kHz mono as `arecord -f S16_LE -r 16000 -c 1` writes it.

use std::io::{self, Cursor, Read};

use neon_audio::{i16_to_f32, is_container, AudioError, AudioStream, RawPcmReader};

/// Bytes looked at to tell a container header from raw samples (`RIFF` size `WAVE`).
const SNIFF: usize = 12;

/// Raw samples read per piece (80 ms at 16 kHz: what a live stream delivers between
/// detections).
const RAW_PIECE: usize = 1280;

/// stdin with the bytes read to sniff its format put back in front.
type Stdin = io::Chain<Cursor<Vec<u8>>, io::Stdin>;

enum Kind {
    Decoded(Box<AudioStream>),
    Raw { reader: RawPcmReader<Stdin>, buf: Vec<i16>, ended: bool },
}

/// An input being read: 16 kHz mono samples, full scale `[-1, 1)`.
pub struct Source {
    /// The input as given (`stdin` for `-`), for messages.
    pub name: String,
    kind: Kind,
    /// 16 kHz samples delivered so far.
    samples: u64,
}

impl Source {
    /// Opens `input`: a path, or `-` for stdin (whose first bytes are read at once to tell
    /// its format: this waits for them).
    ///
    /// # Errors
    /// The decoder's one-line message (unreadable file, unsupported format, bad header).
    pub fn open(input: &str) -> Result<Source, String> {
        if input != "-" {
            let stream = AudioStream::open(input).map_err(|e| e.to_string())?;
            return Ok(Source {
                name: input.into(),
                kind: Kind::Decoded(Box::new(stream)),
                samples: 0,
            });
        }
        let name = "stdin".to_string();
        let mut stdin = io::stdin();
        let mut prefix = Vec::with_capacity(SNIFF);
        // `take` stops at SNIFF bytes or the end of the input, whichever comes first.
        (&mut stdin)
            .take(SNIFF as u64)
            .read_to_end(&mut prefix)
            .map_err(|e| format!("stdin: cannot read: {e}"))?;
        let container = is_container(&prefix);
        let reader = Cursor::new(prefix).chain(stdin);
        let kind = if container {
            Kind::Decoded(Box::new(
                AudioStream::from_read(&name, reader).map_err(|e| e.to_string())?,
            ))
        } else {
            let reader = RawPcmReader::new(&name, reader);
            Kind::Raw { reader, buf: vec![0; RAW_PIECE], ended: false }
        };
        Ok(Source { name, kind, samples: 0 })
    }

    /// Appends the next samples to `out` and returns how many; 0 at the end of the input.
    /// Raw input that ends inside a sample gets a warning and ends there.
    ///
    /// # Errors
    /// A read or decoding error (one line, naming the input).
    pub fn read(&mut self, out: &mut Vec<f32>) -> Result<usize, String> {
        let n = match &mut self.kind {
            Kind::Decoded(stream) => stream.read(out).map_err(|e| e.to_string())?,
            Kind::Raw { ended: true, .. } => 0,
            Kind::Raw { reader, buf, ended } => match reader.read_samples(buf) {
                Ok(n) => {
                    out.extend(buf[..n].iter().map(|&v| i16_to_f32(v)));
                    n
                }
                Err(e @ AudioError::TruncatedData { .. }) => {
                    crate::warn(format_args!("{e}; the last byte was ignored"));
                    *ended = true;
                    0
                }
                Err(e) => return Err(e.to_string()),
            },
        };
        self.samples += n as u64;
        Ok(n)
    }

    /// Reads the input to its end, giving each piece (16 kHz mono samples) to `f`.
    ///
    /// # Errors
    /// [`Source::read`]'s, or `f`'s (reading stops there).
    pub fn for_each_piece(
        &mut self,
        mut f: impl FnMut(&[f32]) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut piece = Vec::new();
        loop {
            piece.clear();
            if self.read(&mut piece)? == 0 {
                return Ok(());
            }
            f(&piece)?;
        }
    }

    /// 16 kHz samples delivered so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The input's declared duration in seconds, when its header gives one.
    pub fn declared_seconds(&self) -> Option<f64> {
        match &self.kind {
            Kind::Decoded(stream) => {
                let info = stream.info();
                info.frames.map(|f| f as f64 / f64::from(info.sample_rate))
            }
            Kind::Raw { .. } => None,
        }
    }

    /// Duration read so far in seconds: source frames over the source rate (raw: samples
    /// over 16 kHz).
    pub fn seconds(&self) -> f64 {
        match &self.kind {
            Kind::Decoded(stream) => {
                stream.frames_decoded() as f64 / f64::from(stream.info().sample_rate)
            }
            Kind::Raw { .. } => self.samples as f64 / 16_000.0,
        }
    }

    /// The error for an input that held no samples, as an empty file's.
    pub fn no_samples(&self) -> String {
        match &self.kind {
            Kind::Raw { .. } => crate::NO_STDIN_SAMPLES.into(),
            Kind::Decoded(_) => AudioError::NoSamples { name: self.name.clone() }.to_string(),
        }
    }

    /// Warns on stderr if samples were clipped (call at the end of the input): how many and
    /// why ([`crate::clip_message`]).
    pub fn warn_clipping(&self) {
        if let Kind::Decoded(stream) = &self.kind {
            if stream.clipped() > 0 {
                let text = crate::clip_message(
                    stream.clipped(),
                    stream.source_peak(),
                    stream.info().sample_rate,
                );
                crate::warn(format_args!("{}: {text}", self.name));
            }
        }
    }
}
