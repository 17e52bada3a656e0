//! FLAC and Ogg/Vorbis decoding with symphonia, packet by packet, down-mixed to mono `f32` at
//! the stream's own rate.
//!
//! The container is chosen from the first bytes (`fLaC` or `OggS`, see
//! [`is_container`](super::stream::is_container)), not probed, and the codec parameters are
//! checked (rate, channels) before a decoder is built. Chained Ogg streams (a new stream after
//! the first ends) are read up to the end of the first. A packet that fails to decode is an
//! error, not skipped.

use std::boxed::Box;
use std::string::{String, ToString};
use std::vec::Vec;
use std::{format, vec};

use symphonia::core::codecs::audio::well_known::{CODEC_ID_FLAC, CODEC_ID_VORBIS};
use symphonia::core::codecs::audio::{AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error;
use symphonia::core::formats::{FormatOptions, FormatReader, TrackType};
use symphonia::core::io::{MediaSource, MediaSourceStream};

use super::decode::{Decode, StreamInfo};
use super::wav::{MAX_RATE, MIN_RATE};
use super::AudioError;

/// Which container the stream is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Container {
    Flac,
    Ogg,
}

/// A FLAC or Ogg stream, decoded as it is read.
pub(super) struct CodecDecoder {
    name: String,
    reader: Box<dyn FormatReader>,
    decoder: Box<dyn AudioDecoder>,
    track: u32,
    channels: usize,
    planes: Vec<Vec<f64>>,
    /// Frames decoded so far.
    frames: u64,
    /// The stream ended (further calls return 0).
    ended: bool,
}

/// Maps a symphonia error to an [`AudioError`] about `name`.
fn error(name: &str, e: Error) -> AudioError {
    match e {
        // symphonia reads past the end of a cut or corrupt stream (its source is fine).
        Error::IoError(source) if source.kind() == std::io::ErrorKind::UnexpectedEof => {
            AudioError::Decode { name: name.into(), reason: "the stream ends early".into() }
        }
        Error::IoError(source) => AudioError::io(name, source),
        Error::Unsupported(what) => {
            AudioError::Unsupported { name: name.into(), format: what.to_string() }
        }
        other => AudioError::Decode { name: name.into(), reason: other.to_string() },
    }
}

/// Reads the container header of `source` and builds the decoder of its first audio track.
///
/// # Errors
/// [`AudioError::Unsupported`] (another codec in an Ogg stream, a rate outside the supported
/// range), [`AudioError::Malformed`] (no audio track, 0 channels), [`AudioError::Decode`],
/// [`AudioError::Io`].
pub(super) fn open(
    name: &str,
    source: Box<dyn MediaSource>,
    container: Container,
) -> Result<(CodecDecoder, StreamInfo), AudioError> {
    let mss = MediaSourceStream::new(source, Default::default());
    let opts = FormatOptions::default();
    let reader: Box<dyn FormatReader> = match container {
        Container::Flac => Box::new(
            symphonia::default::formats::FlacReader::try_new(mss, opts)
                .map_err(|e| error(name, e))?,
        ),
        Container::Ogg => Box::new(
            symphonia::default::formats::OggReader::try_new(mss, opts)
                .map_err(|e| error(name, e))?,
        ),
    };
    let malformed =
        |reason: &str| AudioError::Malformed { name: name.into(), reason: reason.into() };
    let track =
        reader.default_track(TrackType::Audio).ok_or_else(|| malformed("no audio track"))?;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or_else(|| malformed("no audio track"))?;
    let format = match params.codec {
        CODEC_ID_FLAC => match params.bits_per_sample {
            Some(bits) => format!("FLAC, {bits}-bit"),
            None => "FLAC".into(),
        },
        CODEC_ID_VORBIS => "Vorbis".into(),
        _ => {
            let what = if container == Container::Ogg { "Ogg" } else { "FLAC" };
            return Err(AudioError::Unsupported {
                name: name.into(),
                format: format!("{what} with a codec other than FLAC or Vorbis"),
            });
        }
    };
    let rate = params.sample_rate.ok_or_else(|| malformed("no sample rate"))?;
    if rate == 0 {
        return Err(malformed("the sample rate is 0 Hz"));
    }
    if !(MIN_RATE..=MAX_RATE).contains(&rate) {
        return Err(AudioError::Unsupported {
            name: name.into(),
            format: format!("a sample rate of {rate} Hz (supported: {MIN_RATE} to {MAX_RATE} Hz)"),
        });
    }
    let channels = params.channels.as_ref().map_or(0, |c| c.count());
    if channels == 0 {
        return Err(malformed("0 channels"));
    }
    let channels_u16 = u16::try_from(channels).map_err(|_| malformed("too many channels"))?;
    let decoder = symphonia::default::get_codecs()
        .make_audio_decoder(params, &AudioDecoderOptions::default())
        .map_err(|e| error(name, e))?;
    let info =
        StreamInfo { sample_rate: rate, channels: channels_u16, format, frames: track.num_frames };
    let track = track.id;
    let decoder = CodecDecoder {
        name: name.into(),
        reader,
        decoder,
        track,
        channels,
        planes: vec![Vec::new(); channels],
        frames: 0,
        ended: false,
    };
    Ok((decoder, info))
}

impl Decode for CodecDecoder {
    fn next(&mut self, mono: &mut Vec<f32>) -> Result<usize, AudioError> {
        loop {
            if self.ended {
                return Ok(0);
            }
            let packet = match self.reader.next_packet() {
                Ok(Some(p)) => p,
                // The end, or (a chained Ogg stream) a new stream: the end of the first.
                Ok(None) | Err(Error::ResetRequired) => {
                    self.ended = true;
                    return Ok(0);
                }
                Err(e) => return Err(error(&self.name, e)),
            };
            if packet.track_id != self.track {
                continue;
            }
            let buf = self.decoder.decode(&packet).map_err(|e| error(&self.name, e))?;
            if buf.num_planes() != self.channels {
                return Err(AudioError::Decode {
                    name: self.name.clone(),
                    reason: format!(
                        "a packet of {} channels in a stream of {}",
                        buf.num_planes(),
                        self.channels
                    ),
                });
            }
            let frames = buf.frames();
            if frames == 0 {
                continue;
            }
            buf.copy_to_vecs_planar::<f64>(&mut self.planes);
            mono.reserve(frames);
            let n = self.channels as f64;
            for i in 0..frames {
                // Sum in f64, one rounding to f32 after the division (as for WAV).
                let sum: f64 = self.planes.iter().map(|p| p[i]).sum();
                if !sum.is_finite() {
                    let channel = self.planes.iter().position(|p| !p[i].is_finite()).unwrap_or(0);
                    return Err(AudioError::NonFinite {
                        name: self.name.clone(),
                        frame: self.frames + i as u64,
                        channel: channel as u16,
                    });
                }
                mono.push((sum / n) as f32);
            }
            self.frames += frames as u64;
            return Ok(frames);
        }
    }
}
