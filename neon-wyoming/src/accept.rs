//! Accepting `neon serve` clients when accepting fails: at the process's file-descriptor
//! limit (`EMFILE`, `ENFILE`) `accept` fails at once for as long as a client waits, so a
//! plain retry loop spins at 100% CPU and logs a line per try. Here a failure waits before
//! the next try (10 ms, doubling to 1 s), is logged at most once per 10 s with a count,
//! and a client waiting at the limit is told `too-many-clients` through one descriptor kept
//! in reserve for that (the usual way out of the limit: close the spare, accept, answer,
//! close, reopen the spare).

use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

use crate::deadline::ClientStream;
use crate::event::{write_event, Event};

/// A descriptor kept open to be given up for refusing a client at the limit.
pub struct Reserve(Option<File>);

impl Reserve {
    pub fn new() -> Self {
        Reserve(File::open("/dev/null").ok())
    }

    /// `accept()`; when it fails for want of descriptors, the waiting client (if the
    /// reserve lets it in) gets a `too-many-clients` error and is closed. The failure is
    /// returned either way.
    ///
    /// # Errors
    /// `accept`'s.
    pub fn accept<S: ClientStream, X>(
        &mut self,
        mut accept: impl FnMut() -> io::Result<(S, X)>,
    ) -> io::Result<(S, X)> {
        let err = match accept() {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        if matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
            self.0 = None;
            if let Ok((s, _)) = accept() {
                let text =
                    "the server has no file descriptor left for another client; try again later";
                refuse(s, &Event::error(text, "too-many-clients"), DRAIN_AT_LIMIT);
            }
            self.0 = File::open("/dev/null").ok();
        }
        Err(err)
    }
}

/// How long the accept loop drains a client refused at the descriptor limit (it waits
/// after the failed accept anyway).
const DRAIN_AT_LIMIT: Duration = Duration::from_millis(50);

/// Sends `event` to a client that is not served and closes the connection so that the
/// client reads it. Closing a socket with unread bytes (the client's first event, sent
/// before it read anything) resets the connection and drops what was not yet sent, so
/// the event goes out in one write, the writing half is closed, and what the client sent
/// is read and dropped until it closes too or `drain` passes.
pub fn refuse<S: ClientStream>(mut s: S, event: &Event, drain: Duration) {
    let mut bytes = Vec::new();
    let _ = write_event(&mut bytes, event);
    if s.write_all(&bytes).is_ok() {
        close_gently(s, drain);
    }
}

/// Closes a client's connection so that it reads everything written to it and then the end
/// of the stream: the writing half is closed first (the client sees the end once it has
/// read the rest), then what the client still sends is read and dropped until it closes
/// too or `drain` passes. Closing at once with unread bytes would reset the connection,
/// and a client still reading would get a reset instead of the end.
pub fn close_gently<S: ClientStream>(mut s: S, drain: Duration) {
    if s.shutdown_write().is_err() {
        return;
    }
    let until = Instant::now() + drain;
    let mut sink = [0u8; 4096];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_timeout(Some(left)).is_err() {
            return;
        }
        if !matches!(s.read(&mut sink), Ok(n) if n > 0) {
            return;
        }
    }
}

/// Waits and logging after failed accepts.
pub struct Backoff {
    delay: Duration,
    failures: u64,
    logged: Option<Instant>,
}

/// How often a run of failures is logged.
const LOG_EVERY: Duration = Duration::from_secs(10);

impl Backoff {
    pub fn new() -> Self {
        Backoff { delay: Duration::ZERO, failures: 0, logged: None }
    }

    /// After a failure: logs it (at most once per [`LOG_EVERY`], with the count since the
    /// last line) and waits before the next try.
    pub fn failed(&mut self, e: &io::Error, log: impl Fn(&str)) {
        self.failures += 1;
        if self.logged.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
            log(&format!(
                "accept failed: {e} ({} time(s) since the last such line)",
                self.failures
            ));
            self.failures = 0;
            self.logged = Some(Instant::now());
        }
        self.delay = (self.delay * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
        std::thread::sleep(self.delay);
    }

    /// After a success: the next failure waits 10 ms again.
    pub fn succeeded(&mut self) {
        self.delay = Duration::ZERO;
    }
}
