//! A command's output file, written so that a failure or a signal never destroys what the
//! path held and never deletes what the command did not create:
//! - a regular file (or a new path) is written to a temporary file beside it
//!   (`.NAME.neon-PID.tmp`, same directory, so the final rename is atomic) and renamed over
//!   the path only when complete; on an error, or SIGINT / SIGTERM, only the temporary file
//!   is removed;
//! - anything else (a device such as `/dev/null`, a FIFO, `/dev/stdout`) is written in
//!   place, after the data is complete: the data goes to a temporary file in the system's
//!   temporary directory first (a WAV writer must seek back to its header), then is copied;
//!   it is never removed;
//! - the output may not be the input ([`Output::create`] refuses it).

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Where the data goes before it reaches the output.
pub struct Output {
    path: PathBuf,
    temp: PathBuf,
    /// The data is copied into `path` (not renamed over it).
    in_place: bool,
}

/// Whether `a` and `b` name the same file (device and inode).
#[cfg(unix)]
fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &fs::Metadata, _: &fs::Metadata) -> bool {
    false
}

impl Output {
    /// Plans writing `path`; `inputs` are the files the command reads (refused as output).
    ///
    /// # Errors
    /// One line: the output is one of the inputs, or its directory has no room for the
    /// temporary file.
    pub fn create(path: &Path, inputs: &[&Path]) -> Result<(Output, File), String> {
        let target = fs::metadata(path).ok();
        if let Some(t) = &target {
            for input in inputs {
                if fs::metadata(input).is_ok_and(|i| same_file(t, &i)) {
                    return Err(format!(
                        "{}: the output is the input {}; give another path",
                        path.display(),
                        input.display()
                    ));
                }
            }
        }
        let in_place = target.as_ref().is_some_and(|t| !t.is_file());
        let name = path.file_name().map_or("out".into(), |n| n.to_string_lossy().into_owned());
        let temp_name = format!(".{name}.neon-{}.tmp", std::process::id());
        let temp = if in_place {
            std::env::temp_dir().join(temp_name)
        } else {
            path.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .join(temp_name)
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok((Output { path: path.to_path_buf(), temp, in_place }, file))
    }

    /// The data is complete in the temporary file (its writer flushed and closed): it
    /// becomes the output.
    ///
    /// # Errors
    /// One line when renaming or copying fails (the temporary file is removed).
    pub fn commit(self) -> Result<(), String> {
        let done = if self.in_place {
            File::open(&self.temp).and_then(|mut data| {
                let mut out = OpenOptions::new().write(true).open(&self.path)?;
                io::copy(&mut data, &mut out).map(|_| ())
            })
        } else {
            File::open(&self.temp)
                .and_then(|f| f.sync_all())
                .and_then(|()| fs::rename(&self.temp, &self.path))
        };
        let _ = fs::remove_file(&self.temp);
        done.map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }

    /// The command failed or was stopped: the temporary file goes, the output is untouched.
    pub fn abandon(self) {
        let _ = fs::remove_file(&self.temp);
    }
}
