//! The server loop of `neon serve`: one client on stdin/stdout, or a thread per TCP or Unix
//! client, at most [`Server::max_clients`] at once, each served by a [`ClientSession`] over
//! shared models; idle and crawling clients time out; clients past the limit, or arriving at the
//! process's descriptor limit, get a `too-many-clients` error.

use std::io::{self, BufRead, BufReader, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::accept::{close_gently, refuse, Backoff, Reserve};
use crate::asr::AsrModels;
use crate::deadline::{ClientStream, Deadline, TimedReader};
use crate::event::{read_event, write_event, Event, ReadError};
use crate::wake::{ClientSession, WakeModels};

/// Writes one line of the server's log on stderr, prefixed `neon serve: `.
pub fn log(line: &str) {
    let _ = writeln!(io::stderr(), "neon serve: {line}");
}

/// A Wyoming server: the models every client is served with and the limits on clients.
pub struct Server {
    /// The wake-word models (and trigger settings) of every client.
    pub wake: Arc<WakeModels>,
    /// Speech recognition, when a Moonshine model was given.
    pub asr: Option<Arc<AsrModels>>,
    /// Most TCP or Unix clients served at once; one more gets a `too-many-clients` error.
    pub max_clients: usize,
    /// Log every client and event on stderr.
    pub debug: bool,
    /// How long a client may take to send each event whole (`--idle-timeout`).
    pub idle: Duration,
}

impl Server {
    /// Serves `uri` until stdin ends (`stdio://`) or for ever (`tcp://HOST:PORT`,
    /// `unix://PATH`; a stale socket file is replaced, a live one refused).
    ///
    /// # Errors
    /// A one-line message: a malformed URI, an address that cannot be listened on, or (on
    /// `stdio://`) a client whose bytes are not Wyoming events.
    pub fn serve(self, uri: &str) -> Result<(), String> {
        if uri == "stdio://" {
            log("ready on stdio://");
            let stdin = io::stdin();
            let stdout = io::stdout();
            let (mut r, mut w) = (stdin.lock(), stdout.lock());
            return serve_client(
                &self.wake,
                &self.asr,
                (&mut r, &mut w, None),
                self.debug,
                "stdio",
            );
        }
        if let Some(addr) = uri.strip_prefix("tcp://") {
            let listener = std::net::TcpListener::bind(addr)
                .map_err(|e| format!("--uri {}: cannot listen: {e}", uri))?;
            log(&format!("ready on tcp://{}", listener.local_addr().map_err(|e| e.to_string())?));
            let mut reserve = Reserve::new();
            return self.accept_loop(|| {
                let (s, peer) = reserve.accept(|| listener.accept())?;
                // Replies are small and each is awaited: send them at once.
                s.set_nodelay(true)?;
                Ok((s, peer.to_string()))
            });
        }
        #[cfg(unix)]
        if let Some(path) = uri.strip_prefix("unix://") {
            use std::os::unix::fs::FileTypeExt;
            if path.is_empty() {
                return Err(format!("--uri {}: no socket path after unix://", uri));
            }
            if std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
                // A socket file left by a server that is gone is replaced; a live one is not.
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(format!("--uri {}: a server is already listening on {path}", uri));
                }
                let _ = std::fs::remove_file(path);
            }
            let listener = std::os::unix::net::UnixListener::bind(path)
                .map_err(|e| format!("--uri {}: cannot listen: {e}", uri))?;
            log(&format!("ready on unix://{path}"));
            let mut n = 0u64;
            let mut reserve = Reserve::new();
            return self.accept_loop(|| {
                let (s, _) = reserve.accept(|| listener.accept())?;
                n += 1;
                Ok((s, format!("unix client {n}")))
            });
        }
        Err(format!("--uri {}: expected tcp://HOST:PORT, unix://PATH or stdio://", uri))
    }
    /// Accepts clients (a stream and a name for the log) for ever, one thread each, at most
    /// `max` at once.
    fn accept_loop<S: ClientStream>(
        self,
        mut accept: impl FnMut() -> io::Result<(S, String)>,
    ) -> Result<(), String> {
        let clients = Arc::new(AtomicUsize::new(0));
        let refusing = Arc::new(AtomicUsize::new(0));
        let mut backoff = Backoff::new();
        loop {
            let (stream, who) = match accept() {
                Ok(c) => {
                    backoff.succeeded();
                    c
                }
                Err(e) => {
                    backoff.failed(&e, log);
                    continue;
                }
            };
            if clients.fetch_add(1, Ordering::SeqCst) >= self.max_clients {
                clients.fetch_sub(1, Ordering::SeqCst);
                let text =
                    format!("too many clients (at most {}); try again later", self.max_clients);
                log(&format!("{who}: refused: {text}"));
                refuse_aside(stream, Event::error(&text, "too-many-clients"), &refusing);
                continue;
            }
            // The reading handle; at the descriptor limit the client is told so.
            let reading = match stream.try_clone() {
                Ok(r) => r,
                Err(e) => {
                    clients.fetch_sub(1, Ordering::SeqCst);
                    let text = format!("the server cannot take another client now: {e}");
                    log(&format!("{who}: refused: {text}"));
                    refuse_aside(stream, Event::error(&text, "too-many-clients"), &refusing);
                    continue;
                }
            };
            if let Err(e) = self.spawn_client((reading, stream), &who, &clients) {
                log(&format!("cannot serve {who}: {e}"));
                clients.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Serves one client on a thread of its own, which gives its place back when it ends.
    ///
    /// # Errors
    /// The thread's.
    fn spawn_client<S: ClientStream>(
        &self,
        (reading, mut writer): (S, S),
        who: &str,
        clients: &Arc<AtomicUsize>,
    ) -> io::Result<()> {
        let deadline = Deadline::new(self.idle);
        let mut reader = BufReader::new(TimedReader::new(reading, deadline.clone()));
        let (models, asr, clients) = (self.wake.clone(), self.asr.clone(), clients.clone());
        let (debug, who) = (self.debug, who.to_string());
        std::thread::Builder::new().name(format!("client {who}")).spawn(move || {
            if debug {
                log(&format!("{who}: connected"));
            }
            let io = (&mut reader, &mut writer, Some(&*deadline));
            if let Err(e) = serve_client(&models, &asr, io, debug, &who) {
                log(&format!("{who}: {e}"));
            }
            if debug {
                log(&format!("{who}: disconnected"));
            }
            // The place is free at once; the connection is closed without a reset.
            clients.fetch_sub(1, Ordering::SeqCst);
            drop(writer);
            close_gently(reader.into_inner().into_inner(), DRAIN);
        })?;
        Ok(())
    }
}

/// Refused clients drained at once on threads of their own, at most; more are closed
/// without draining (their reply may then be lost to a reset).
const MAX_REFUSING: usize = 16;

/// How long a client refused for `--max-clients`, or closed after it was served, is drained
/// (so that it reads its last reply and the end of the stream, not a reset).
const DRAIN: Duration = Duration::from_millis(200);

/// [`refuse`] on a thread of its own, so that a crowd of refused clients does not slow
/// the accept loop; past [`MAX_REFUSING`] at once, without draining.
fn refuse_aside<S: ClientStream>(stream: S, event: Event, refusing: &Arc<AtomicUsize>) {
    if refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::SeqCst);
        return refuse(stream, &event, Duration::ZERO);
    }
    let counter = refusing.clone();
    let spawned = std::thread::Builder::new().name("refusing".into()).spawn(move || {
        refuse(stream, &event, DRAIN);
        counter.fetch_sub(1, Ordering::SeqCst);
    });
    if spawned.is_err() {
        refusing.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One client's events until it disconnects.
///
/// # Errors
/// A one-line message when its bytes are not Wyoming events (after an `error` event is
/// sent) or the connection fails.
fn serve_client<R: BufRead, W: Write>(
    models: &Arc<WakeModels>,
    asr: &Option<Arc<AsrModels>>,
    (reader, writer, deadline): (&mut R, &mut W, Option<&Deadline>),
    debug: bool,
    who: &str,
) -> Result<(), String> {
    let mut session = ClientSession::with_asr(models.clone(), asr.clone());
    let mut replies = Vec::new();
    let mut out = Vec::new();
    loop {
        if let Some(d) = deadline {
            d.restart();
        }
        let event = match read_event(reader) {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(()),
            Err(ReadError::Malformed(m)) => {
                let _ = write_event(
                    writer,
                    &Event::error(&format!("malformed event: {m}"), "malformed-event"),
                );
                return Err(format!("malformed event, disconnected: {m}"));
            }
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(format!("disconnected inside an event: {e}"));
            }
            Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => {
                let limit = deadline.map_or(0.0, |d| d.limit().as_secs_f64());
                let text = format!("no complete event within {limit} s (--idle-timeout)");
                let _ = write_event(writer, &Event::error(&text, "timeout"));
                return Err(format!("{text}: disconnected"));
            }
            Err(ReadError::Io(e)) => return Err(format!("read failed: {e}")),
        };
        if debug && event.kind != "audio-chunk" {
            log(&format!(
                "{who}: {} {}",
                event.kind,
                serde_json::Value::Object(event.data.clone())
            ));
        }
        replies.clear();
        if let Err(m) = session.handle(&event, &mut replies) {
            replies.push(Event::error(&m, "bad-event"));
        }
        // The replies to one event go out in one write: over TCP, separate small writes
        // would wait for the client's delayed ACK (Nagle), ~40 ms each after the first.
        out.clear();
        for r in &replies {
            if debug {
                log(&format!("{who}: -> {} {}", r.kind, serde_json::Value::Object(r.data.clone())));
            }
            write_event(&mut out, r).map_err(|e| format!("cannot encode a reply: {e}"))?;
        }
        if out.is_empty() {
            continue;
        }
        match writer.write_all(&out).and_then(|()| writer.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(format!("write failed: {e}")),
        }
    }
}
