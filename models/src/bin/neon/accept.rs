//! Accepting `neon serve` clients when accepting fails: at the process's file-descriptor
//! limit (`EMFILE`, `ENFILE`) `accept` fails at once for as long as a client waits, so a
//! plain retry loop spins at 100% CPU and logs a line per try. Here a failure waits before
//! the next try (10 ms, doubling to 1 s), is logged at most once per 10 s with a count,
//! and a client waiting at the limit is told `too-many-clients` through one descriptor kept
//! in reserve for that (the usual way out of the limit: close the spare, accept, answer,
//! close, reopen the spare).

use std::fs::File;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use neon_models::wyoming::event::{write_event, Event};

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
    pub fn accept<S: Write, X>(
        &mut self,
        mut accept: impl FnMut() -> io::Result<(S, X)>,
    ) -> io::Result<(S, X)> {
        let err = match accept() {
            Ok(c) => return Ok(c),
            Err(e) => e,
        };
        if matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
            self.0 = None;
            if let Ok((mut s, _)) = accept() {
                let text =
                    "the server has no file descriptor left for another client; try again later";
                let _ = write_event(&mut s, &Event::error(text, "too-many-clients"));
            }
            self.0 = File::open("/dev/null").ok();
        }
        Err(err)
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
