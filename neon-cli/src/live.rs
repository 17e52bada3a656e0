//! Live input for `neon wake -`, `neon transcribe -` and `neon listen -`: audio read from
//! stdin on a thread of its own, so the command can end on SIGINT or SIGTERM with what it
//! gathered (exit 130 / 143) and notice a closed stdout within [`TICK`] while no audio
//! arrives.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

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

/// What the reader thread sends: 16 kHz mono samples (full scale 1), or the error that
/// ended the stream (one line).
pub type Piece = Result<Vec<f32>, String>;

/// Pieces the reader may read ahead of the command (16 of 80 ms for raw input).
const AHEAD: usize = 16;

/// An input read on its own thread ([`read`]).
pub struct Reader {
    rx: Receiver<Piece>,
    /// The source once read to its end (`None` after an error, sent as a piece).
    thread: JoinHandle<Option<Source>>,
}

/// Reads `open()`'s source (opened on the reader thread: for stdin, its first bytes are
/// waited for there) on its own thread, sending the samples in the pieces they arrive in.
pub fn read(open: impl FnOnce() -> Result<Source, String> + Send + 'static) -> Reader {
    let (tx, rx) = mpsc::sync_channel::<Piece>(AHEAD);
    let thread = std::thread::spawn(move || {
        let mut source = match open() {
            Ok(source) => source,
            Err(e) => {
                let _ = tx.send(Err(e));
                return None;
            }
        };
        loop {
            let mut buf = Vec::new();
            match source.read(&mut buf) {
                Ok(0) => return Some(source),
                Ok(_) => {
                    if tx.send(Ok(buf)).is_err() {
                        return None;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return None;
                }
            }
        }
    });
    Reader { rx, thread }
}

/// How a live stream ended.
pub enum Ended {
    /// The input ended: its source, read to the end (for its sample count, duration and
    /// clipping warning).
    Input(Box<Source>),
    /// A signal arrived: the exit status (130 for SIGINT, 143 for SIGTERM).
    Signal(i32),
}

/// Feeds `each` every piece `reader` reads, as it arrives, until the input ends or a signal
/// arrives (checked every [`TICK`] while waiting and after each piece). On a signal the
/// pieces already read ahead are fed first: what was gathered, up to the signal, is all
/// the command's. A closed stdout ends the program quietly (status 0) within a [`TICK`]
/// although no audio arrives.
///
/// # Errors
/// A read or decoding error of the input, or `each`'s.
pub fn feed(
    reader: Reader,
    signals: &Signals,
    mut each: impl FnMut(&[f32]) -> Result<(), String>,
) -> Result<Ended, String> {
    loop {
        let piece = match next(&reader.rx, signals) {
            Next::Piece(piece) => piece?,
            Next::End => break,
            Next::Signal(status) => {
                // Only what is queued now: the reader keeps reading meanwhile.
                for _ in 0..AHEAD {
                    match reader.rx.try_recv() {
                        Ok(piece) => each(&piece?)?,
                        Err(_) => break,
                    }
                }
                return Ok(Ended::Signal(status));
            }
            Next::StdoutClosed => std::process::exit(0),
        };
        each(&piece)?;
    }
    // The channel closes when the thread returns: joining takes no time.
    let source = reader.thread.join().map_err(|_| "the input reader panicked".to_string())?;
    // Without a source the thread sent its error, which ended the loop above.
    Ok(Ended::Input(Box::new(source.ok_or("the input reader failed")?)))
}

/// What waiting for the next piece gave.
enum Next {
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
fn next(rx: &Receiver<Piece>, signals: &Signals) -> Next {
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
