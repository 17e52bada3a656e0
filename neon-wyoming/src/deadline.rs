//! Time limits on a `neon serve` client's events (`--idle-timeout`): each event must arrive
//! whole (header, data and payload) within the limit of the server starting to wait for it,
//! so a silent client, or one that stops (or crawls) halfway through an event, is closed
//! instead of holding one of `--max-clients` places for ever. The time the server spends
//! answering (a transcription) does not count: the clock starts when it waits again.

use std::io::{self, Read};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When the event being read must be complete.
pub struct Deadline {
    limit: Duration,
    at: Mutex<Instant>,
}

impl Deadline {
    /// A deadline `limit` after each [`Deadline::restart`].
    pub fn new(limit: Duration) -> Arc<Self> {
        Arc::new(Deadline { limit, at: Mutex::new(Instant::now() + limit) })
    }

    /// The server starts waiting for the next event.
    pub fn restart(&self) {
        if let Ok(mut at) = self.at.lock() {
            *at = Instant::now() + self.limit;
        }
    }

    /// The limit (for messages).
    pub fn limit(&self) -> Duration {
        self.limit
    }

    fn remaining(&self) -> Duration {
        self.at.lock().map_or(Duration::ZERO, |at| at.saturating_duration_since(Instant::now()))
    }
}

/// A client's socket: reads that can time out, a second handle for writing, and a
/// half-close.
pub trait ClientStream: Read + io::Write + Send + Sized + 'static {
    /// `std`'s `set_read_timeout` of the socket type.
    ///
    /// # Errors
    /// The socket's.
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;

    /// `std`'s `try_clone`: another handle on the same socket.
    ///
    /// # Errors
    /// The socket's (`EMFILE` at the descriptor limit).
    fn try_clone(&self) -> io::Result<Self>;

    /// Ends the writing half (the peer reads the end of the stream once it has read
    /// everything written before).
    ///
    /// # Errors
    /// The socket's.
    fn shutdown_write(&self) -> io::Result<()>;
}

impl ClientStream for std::net::TcpStream {
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)
    }

    fn try_clone(&self) -> io::Result<Self> {
        std::net::TcpStream::try_clone(self)
    }

    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(std::net::Shutdown::Write)
    }
}

#[cfg(unix)]
impl ClientStream for std::os::unix::net::UnixStream {
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)
    }

    fn try_clone(&self) -> io::Result<Self> {
        std::os::unix::net::UnixStream::try_clone(self)
    }

    fn shutdown_write(&self) -> io::Result<()> {
        self.shutdown(std::net::Shutdown::Write)
    }
}

/// Reads of `stream` that fail with [`io::ErrorKind::TimedOut`] once `deadline` has passed.
pub struct TimedReader<S> {
    stream: S,
    deadline: Arc<Deadline>,
}

impl<S: ClientStream> TimedReader<S> {
    pub fn new(stream: S, deadline: Arc<Deadline>) -> Self {
        TimedReader { stream, deadline }
    }

    /// The socket, without the deadline.
    pub fn into_inner(self) -> S {
        self.stream
    }
}

impl<S: ClientStream> Read for TimedReader<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.remaining();
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.stream.set_timeout(Some(left))?;
        match self.stream.read(buf) {
            // A socket read timeout is WouldBlock on Unix, TimedOut elsewhere.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            r => r,
        }
    }
}
