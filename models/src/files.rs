//! Reading whole files with a size limit (feature `std`).
//!
//! Every file the models read whole (Moonshine's weights and tokenizer, a wake-word head
//! given by path, a microWakeWord model and its JSON) goes through [`read_limited`]: it must be a regular file (not a directory,
//! FIFO or device) no larger than a documented limit, so that `--model /dev/zero` or a
//! directory given as a file is a one-line error naming the path, never a read that grows
//! memory without bound.

use std::io::{self, Read};
use std::path::Path;
use std::vec::Vec;

use crate::error::Error;

/// Largest Moonshine weights file read (`base-en.safetensors` is about 62 MB): 256 MiB.
pub const WEIGHTS_LIMIT: u64 = 256 << 20;
/// Largest `tokenizer.bin` read (base-en's is about 140 kB): 4 MiB.
pub const TOKENIZER_LIMIT: u64 = 4 << 20;
/// Largest wake-word head (`--model PATH` safetensors; the official heads are under 1 MB):
/// 16 MiB.
pub const HEAD_LIMIT: u64 = 16 << 20;
/// Largest microWakeWord `.tflite` read (the shipped ones are 52 to 81 kB): 16 MiB.
pub const MICRO_MODEL_LIMIT: u64 = 16 << 20;
/// Largest microWakeWord model JSON read (the shipped ones are under 500 bytes): 1 MiB.
pub const MICRO_CONFIG_LIMIT: u64 = 1 << 20;

/// A limit in words: `256 MiB`, `4 MiB`, or bytes when not a whole number of MiB.
fn size(limit: u64) -> std::string::String {
    if limit.is_multiple_of(1 << 20) {
        std::format!("{} MiB", limit >> 20)
    } else {
        std::format!("{limit} bytes")
    }
}

/// Reads the regular file at `path` whole, refusing anything larger than `limit` bytes.
///
/// The file's metadata is checked first (a directory, FIFO, socket or device is refused
/// before it is opened for reading, and a regular file over the limit before any byte is
/// read); the read itself takes at most `limit + 1` bytes, so a file that grows while it is
/// read is refused too.
///
/// # Errors
/// [`Error::Io`] naming `path`: the file cannot be found or read (the OS error), or it is not
/// a regular file, or it is larger than `limit` (the message names the limit).
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, Error> {
    let fail = |error: io::Error| Error::Io { path: path.to_path_buf(), error };
    let invalid =
        |message: std::string::String| fail(io::Error::new(io::ErrorKind::InvalidInput, message));
    let meta = std::fs::metadata(path).map_err(fail)?;
    if meta.is_dir() {
        return Err(invalid("is a directory, not a file".into()));
    }
    if !meta.is_file() {
        return Err(invalid("not a regular file (a device, FIFO or socket)".into()));
    }
    let too_large = |len: std::string::String| {
        invalid(std::format!("{len} bytes, larger than the limit of {} for this file", size(limit)))
    };
    if meta.len() > limit {
        return Err(too_large(std::format!("{}", meta.len())));
    }
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(fail)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(std::format!("more than {limit}")));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

    fn message(r: Result<Vec<u8>, Error>) -> std::string::String {
        r.expect_err("must fail").to_string()
    }

    #[test]
    fn reads_a_file_up_to_the_limit() {
        let dir = std::env::temp_dir().join(std::format!("neon-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ten.bin");
        std::fs::write(&path, [7u8; 10]).unwrap();
        assert_eq!(read_limited(&path, 10).unwrap(), [7u8; 10]);
        let m = message(read_limited(&path, 9));
        assert!(m.starts_with(&std::format!("{}: 10 bytes, larger than", path.display())), "{m}");
        assert!(m.contains("9 bytes"), "{m}");
        let m = message(read_limited(&dir, 10));
        assert!(m.contains("is a directory"), "{m}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn refuses_devices_and_missing_files() {
        let m = message(read_limited(Path::new("/dev/zero"), HEAD_LIMIT));
        assert!(m.starts_with("/dev/zero: not a regular file"), "{m}");
        let m = message(read_limited(Path::new("/nonexistent/neon/x.bin"), HEAD_LIMIT));
        assert!(m.starts_with("/nonexistent/neon/x.bin: "), "{m}");
    }

    #[test]
    fn limits_are_named_in_mib() {
        assert_eq!(size(WEIGHTS_LIMIT), "256 MiB");
        assert_eq!(size(TOKENIZER_LIMIT), "4 MiB");
        assert_eq!(size(HEAD_LIMIT), "16 MiB");
    }
}
