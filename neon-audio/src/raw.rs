//! Headerless s16le 16 kHz mono input from a pipe (`arecord -f S16_LE -r 16000 -c 1 | ...`).

use std::io::{ErrorKind, Read};
use std::string::String;
use std::vec;
use std::vec::Vec;

use super::AudioError;

/// Reads raw signed 16-bit little-endian mono samples (assumed to be 16 kHz; nothing in the
/// stream says so) from any byte source, in chunks as they arrive.
///
/// Each [`read_samples`](Self::read_samples) call makes as few `read` calls on the source as
/// it takes to obtain one whole sample and returns everything that arrived (up to the chunk
/// size), so a live pipe is processed with no more latency than the source's own buffering. A
/// sample split across two reads is reassembled. The reader owns one byte buffer of
/// `2 * max_chunk` bytes, allocated at construction; reading does not allocate (the
/// [`Iterator`] implementation allocates one `Vec` per chunk).
#[derive(Debug)]
pub struct RawPcmReader<R> {
    inner: R,
    name: String,
    /// Bytes read but not yet returned; `buf[0]` holds the odd byte of a split sample.
    buf: Vec<u8>,
    /// The first byte of a sample whose second byte has not arrived.
    pending: Option<u8>,
    /// Whole samples returned so far.
    samples: u64,
    done: bool,
}

impl<R: Read> RawPcmReader<R> {
    /// Default largest chunk: 1280 samples, 80 ms at 16 kHz (one openWakeWord frame).
    pub const DEFAULT_CHUNK: usize = 1280;

    /// A reader returning chunks of at most [`Self::DEFAULT_CHUNK`] samples; `name` is used in
    /// messages (e.g. `"<stdin>"`).
    pub fn new(name: impl Into<String>, inner: R) -> Self {
        Self::with_chunk(name, inner, Self::DEFAULT_CHUNK)
    }

    /// A reader returning chunks of at most `max_chunk` samples (at least 1).
    pub fn with_chunk(name: impl Into<String>, inner: R, max_chunk: usize) -> Self {
        let max_chunk = max_chunk.max(1);
        RawPcmReader {
            inner,
            name: name.into(),
            buf: vec![0; 2 * max_chunk],
            pending: None,
            samples: 0,
            done: false,
        }
    }

    /// Largest number of samples one call returns.
    pub fn max_chunk(&self) -> usize {
        self.buf.len() / 2
    }

    /// Whole samples returned so far (divide by 16000 for seconds).
    pub fn samples_read(&self) -> u64 {
        self.samples
    }

    /// The underlying source.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Blocks until at least one whole sample has arrived, then writes the samples that
    /// arrived (at most `min(out.len(), max_chunk)`) to the front of `out` and returns their
    /// count. Returns 0 at the end of the stream (and if `out` is empty).
    ///
    /// # Errors
    /// [`AudioError::Io`] if the source fails (interrupted reads are retried);
    /// [`AudioError::TruncatedData`] if the stream ends inside a sample (an odd number of
    /// bytes). After an error or the end of the stream, every call returns `Ok(0)`.
    pub fn read_samples(&mut self, out: &mut [i16]) -> Result<usize, AudioError> {
        let max = out.len().min(self.max_chunk());
        if max == 0 || self.done {
            return Ok(0);
        }
        loop {
            let start = match self.pending {
                Some(b) => {
                    self.buf[0] = b;
                    1
                }
                None => 0,
            };
            let n = match self.inner.read(&mut self.buf[start..2 * max]) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.done = true;
                    return Err(AudioError::io(&self.name, e));
                }
            };
            if n == 0 {
                self.done = true;
                if self.pending.is_some() {
                    let available = 2 * self.samples + 1;
                    return Err(AudioError::TruncatedData {
                        name: self.name.clone(),
                        declared: available + 1,
                        available,
                    });
                }
                return Ok(0);
            }
            let have = start + n;
            let count = have / 2;
            for (o, b) in out.iter_mut().zip(self.buf[..2 * count].chunks_exact(2)) {
                *o = i16::from_le_bytes([b[0], b[1]]);
            }
            self.pending = (have % 2 == 1).then(|| self.buf[have - 1]);
            if count > 0 {
                self.samples += count as u64;
                return Ok(count);
            }
        }
    }
}

impl<R: Read> Iterator for RawPcmReader<R> {
    type Item = Result<Vec<i16>, AudioError>;

    /// The next chunk as it arrives (see [`RawPcmReader::read_samples`]); `None` at the end of
    /// the stream and after an error.
    fn next(&mut self) -> Option<Self::Item> {
        let mut chunk = vec![0; self.max_chunk()];
        match self.read_samples(&mut chunk) {
            Ok(0) => None,
            Ok(n) => {
                chunk.truncate(n);
                Some(Ok(chunk))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    /// A source that returns its bytes in reads of the given sizes (cycled), with an
    /// `Interrupted` error before every third read.
    struct Jerky {
        data: Vec<u8>,
        pos: usize,
        sizes: Vec<usize>,
        calls: usize,
    }

    impl Read for Jerky {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(ErrorKind::Interrupted.into());
            }
            let size = self.sizes[self.calls % self.sizes.len()];
            let n = size.min(buf.len()).min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn samples(n: usize) -> Vec<i16> {
        (0..n).map(|i| ((i as i64 * 7919) % 65536 - 32768) as i16).collect()
    }

    fn bytes(s: &[i16]) -> Vec<u8> {
        s.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn odd_read_boundaries_reassemble_samples() {
        let want = samples(5000);
        for sizes in [vec![1], vec![3], vec![1, 2, 5, 7], vec![4097], vec![2, 1, 1, 3, 999]] {
            for max_chunk in [1, 3, 160, 1280] {
                let src = Jerky { data: bytes(&want), pos: 0, sizes: sizes.clone(), calls: 0 };
                let mut r = RawPcmReader::with_chunk("<test>", src, max_chunk);
                let mut got = Vec::new();
                for chunk in &mut r {
                    let chunk = chunk.unwrap();
                    assert!(!chunk.is_empty() && chunk.len() <= max_chunk);
                    got.extend(chunk);
                }
                assert_eq!(got, want, "{sizes:?} {max_chunk}");
                assert_eq!(r.samples_read(), want.len() as u64);
            }
        }
    }

    #[test]
    fn chunks_return_as_soon_as_a_sample_arrives() {
        // Reads of 3 bytes: the first call returns 1 sample (1 byte kept), the second 2.
        let src = Jerky { data: bytes(&samples(10)), pos: 0, sizes: vec![3], calls: 0 };
        let mut r = RawPcmReader::new("<test>", src);
        let mut out = [0i16; 100];
        assert_eq!(r.read_samples(&mut out).unwrap(), 1);
        assert_eq!(r.read_samples(&mut out).unwrap(), 2);
        // `out` shorter than the chunk size bounds the count.
        assert_eq!(r.read_samples(&mut out[..1]).unwrap(), 1);
    }

    #[test]
    fn a_trailing_odd_byte_is_an_error() {
        let mut data = bytes(&samples(3));
        data.push(0x12);
        let src = Jerky { data, pos: 0, sizes: vec![2], calls: 0 };
        let mut r = RawPcmReader::new("<stdin>", src);
        let chunks: Vec<_> = (&mut r).collect();
        assert_eq!(chunks.len(), 4);
        let err = chunks[3].as_ref().unwrap_err();
        assert!(matches!(err, AudioError::TruncatedData { declared: 8, available: 7, .. }));
        assert!(err.to_string().starts_with("<stdin>: "), "{err}");
        assert_eq!(r.read_samples(&mut [0; 4]).unwrap(), 0);
    }

    #[test]
    fn empty_stream_and_empty_output() {
        let mut r = RawPcmReader::new("<stdin>", std::io::empty());
        assert_eq!(r.read_samples(&mut []).unwrap(), 0);
        assert!(r.next().is_none());
    }

    #[test]
    fn io_errors_are_reported_with_the_name() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("device gone"))
            }
        }
        let mut r = RawPcmReader::new("<stdin>", Broken);
        let err = r.next().unwrap().unwrap_err();
        assert_eq!(err.to_string(), "cannot read <stdin>: device gone");
        assert!(r.next().is_none());
    }
}
