//! `neon serve` over TCP for the tests. The server listens on a port the kernel picks
//! (`--uri tcp://127.0.0.1:0`) and the test reads that port from the server's
//! `ready on tcp://…` line. A port picked by the test (a listener bound to port 0 and
//! dropped) can be taken by another test's connections before the server binds it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

/// A running `neon serve` on 127.0.0.1; killed when dropped.
pub struct TcpServer {
    pub child: Child,
    /// The port it listens on.
    pub port: u16,
    log: Option<JoinHandle<String>>,
}

impl TcpServer {
    /// `neon serve --uri tcp://127.0.0.1:0 ARGS`, returned once it listens.
    pub fn start(args: &[&str]) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_neon"));
        cmd.args(["serve", "--uri", "tcp://127.0.0.1:0"]).args(args);
        Self::spawn(cmd)
    }

    /// `cmd`, a `neon serve` on `tcp://127.0.0.1:0` (e.g. under `sh -c 'ulimit …; exec …'`),
    /// returned once it listens. Panics with everything it logged if it ends first.
    pub fn spawn(mut cmd: Command) -> Self {
        let mut child =
            cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut log = String::new();
        let port = loop {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                let status = child.wait();
                panic!("neon serve ended before it listened ({status:?}):\n{log}");
            }
            log.push_str(&line);
            if let Some(addr) = line.trim_end().strip_prefix("neon serve: ready on tcp://") {
                break addr.rsplit(':').next().unwrap().parse().expect("a port");
            }
        };
        let log = std::thread::spawn(move || {
            let _ = err.read_to_string(&mut log);
            log
        });
        Self { child, port, log: Some(log) }
    }

    /// Whether it is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Stops it (SIGKILL); everything it logged.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.log.take().unwrap().join().unwrap()
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
