//! A `neon` command fed on stdin as a live stream (stdin kept open between writes), its
//! stdout read line by line with timeouts, and signalled: every wait is bounded, so a
//! program that prints too late or never exits fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running `neon ARGS` reading a pipe the test writes to.
pub struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Stdout's lines (without their newline), as the program writes them.
    lines: Receiver<String>,
    stderr: Option<JoinHandle<String>>,
}

/// How a [`Live`] program ended.
pub struct Ended {
    pub status: ExitStatus,
    /// The stdout lines not taken with [`Live::line`].
    pub lines: Vec<String>,
    pub stderr: String,
}

impl Live {
    /// Starts `neon ARGS` with piped stdin, stdout and stderr.
    pub fn spawn(args: &[&str]) -> Live {
        let mut child = super::neon_piped(args);
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        Live { child, stdin, lines, stderr: Some(stderr) }
    }

    /// Writes `samples` as raw s16le (stdin stays open).
    pub fn write(&mut self, samples: &[i16]) {
        let bytes = super::s16le(samples);
        let stdin = self.stdin.as_mut().expect("stdin is closed");
        if let Err(e) = stdin.write_all(&bytes).and_then(|()| stdin.flush()) {
            let pid = self.child.id();
            panic!("writing to neon (pid {pid}): {e}; stderr: {}", self.kill_and_stderr());
        }
    }

    /// Closes stdin: the end of the input.
    pub fn close(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line, waiting at most `timeout` for it (else the program is killed
    /// and the test fails with its stderr).
    pub fn line(&mut self, timeout: Duration) -> String {
        match self.lines.recv_timeout(timeout) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!("no line within {timeout:?}; stderr: {}", self.kill_and_stderr())
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("stdout ended before a line; stderr: {}", self.kill_and_stderr())
            }
        }
    }

    /// Sends signal `sig` (e.g. `libc::SIGINT`) to the program.
    pub fn signal(&self, sig: i32) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) with the id of our own child, which has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0, "kill {sig}");
    }

    /// Waits at most `timeout` for the program to exit (stdin is closed only if `close` was
    /// called), then collects the rest of its output.
    pub fn wait(mut self, timeout: Duration) -> Ended {
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > timeout {
                panic!("still running after {timeout:?}; stderr: {}", self.kill_and_stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self.stderr.take().unwrap().join().unwrap();
        // The program has exited: its stdout is at its end once the reader has taken it all.
        let lines = self.lines.iter().collect();
        Ended { status, lines, stderr }
    }

    fn kill_and_stderr(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stderr.take().map(|h| h.join().unwrap()).unwrap_or_default()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // A failed test leaves no program behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Two tests of how a live command ends on a signal: `$sigint` runs `$body(SIGINT, 130)` and
/// `$sigterm` runs `$body(SIGTERM, 143)` (the exit status of a signal is 128 + its number).
#[allow(unused_macros)] // not every live suite signals
macro_rules! signal_tests {
    ($body:ident, $sigint:ident, $sigterm:ident) => {
        #[test]
        fn $sigint() {
            $body(libc::SIGINT, 130);
        }

        #[test]
        fn $sigterm() {
            $body(libc::SIGTERM, 143);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use signal_tests;
