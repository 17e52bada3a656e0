//! Live input for `neon wake -`: audio read from stdin on a thread of its own, so the
//! command can end on SIGINT or SIGTERM with what it gathered (exit 130 / 143) and notice a
//! closed stdout within [`TICK`] while no audio arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use neon_models::audio::f32_to_i16;

use crate::input::Source;

/// How often the command looks at signals and stdout while waiting for audio.
pub const TICK: Duration = Duration::from_millis(200);

/// A signal that ends the stream, recorded by the handler.
pub struct Signals(Arc<AtomicUsize>);

impl Signals {
    /// Catches SIGINT and SIGTERM from now on (recorded, not acted on: the command decides
    /// when to stop and report).
    pub fn catch() -> Result<Signals, String> {
        let caught = Arc::new(AtomicUsize::new(0));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_usize(sig, Arc::clone(&caught), sig as usize)
                .map_err(|e| format!("cannot catch signal {sig}: {e}"))?;
        }
        Ok(Signals(caught))
    }

    /// The exit status of the signal received (128 + its number: 130 for SIGINT, 143 for
    /// SIGTERM), if one was.
    pub fn exit_status(&self) -> Option<i32> {
        match self.0.load(Ordering::Relaxed) {
            0 => None,
            sig => Some(128 + sig as i32),
        }
    }
}

/// Whether stdout is a pipe or socket whose reader has gone (`poll` reports an error or
/// hang-up on it): writing would fail, so there is no one left to report to.
pub fn stdout_closed() -> bool {
    let mut fd = libc::pollfd { fd: libc::STDOUT_FILENO, events: 0, revents: 0 };
    // SAFETY: `fd` is a valid pollfd for the duration of the call; one entry, no timeout.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// What the reader thread sends: int16 samples at 16 kHz, or the error that ended the stream
/// (one line).
pub type Piece = Result<Vec<i16>, String>;

/// Reads stdin ([`Source::open`]`("-")`: decoded if it starts with a file header, else raw
/// s16le) on its own thread, sending the samples as int16 values in the pieces they arrive
/// in. The channel closes at the end of the input (after an error, if any); clipping is
/// warned about at the end.
pub fn read_stdin() -> Receiver<Piece> {
    let (tx, rx) = mpsc::sync_channel::<Piece>(16);
    std::thread::spawn(move || {
        let mut source = match Source::open("-") {
            Ok(source) => source,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match source.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    if tx.send(Ok(buf.iter().map(|&x| f32_to_i16(x)).collect())).is_err() {
                        return;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        source.warn_clipping();
    });
    rx
}

/// What waiting for the next piece gave.
pub enum Next {
    /// Samples, or the error that ended the input.
    Piece(Piece),
    /// The input ended.
    End,
    /// A signal arrived: its exit status.
    Signal(i32),
    /// Stdout's reader has gone.
    StdoutClosed,
}

/// The next piece from `rx`, checking `signals` and stdout every [`TICK`] while waiting.
pub fn next(rx: &Receiver<Piece>, signals: &Signals) -> Next {
    loop {
        if let Some(status) = signals.exit_status() {
            return Next::Signal(status);
        }
        match rx.recv_timeout(TICK) {
            Ok(piece) => return Next::Piece(piece),
            // A signal that came while waiting wins over the end of the input (a shell
            // closing the pipe as it interrupts the pipeline).
            Err(RecvTimeoutError::Disconnected) => {
                return signals.exit_status().map_or(Next::End, Next::Signal)
            }
            Err(RecvTimeoutError::Timeout) => {
                if stdout_closed() {
                    return Next::StdoutClosed;
                }
            }
        }
    }
}
