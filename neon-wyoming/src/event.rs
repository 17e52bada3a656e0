//! Wyoming events on a byte stream: [`read_event`] and [`write_event`].
//!
//! The framing, as the `wyoming` Python package (1.x) reads and writes it: one line of JSON
//! (the header) with `type`, optionally `version`, an inline `data` object (older writers)
//! and the lengths `data_length` and `payload_length`; then `data_length` bytes of a JSON
//! object merged over the inline data; then `payload_length` bytes of binary payload (audio).
//! Absent or zero lengths mean nothing follows.
//!
//! Limits (a client cannot make the server buffer more; each is far above what Home
//! Assistant sends, 2048-byte audio chunks of 64 ms): a header line of at most
//! [`MAX_HEADER_BYTES`], data of at most [`MAX_DATA_BYTES`], a payload of at most
//! [`MAX_PAYLOAD_BYTES`]. A violation, invalid JSON, a header that is not an object with a
//! string `type`, data that is not an object, or a negative or non-integer length is a
//! [`ReadError::Malformed`]; the stream cannot be resynchronised after it.

use std::io::{self, BufRead, Read, Write};

use serde_json::{Map, Value};

/// Longest header line accepted, newline included (64 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Largest `data_length` accepted (1 MiB).
pub const MAX_DATA_BYTES: usize = 1 << 20;
/// Largest `payload_length` accepted (4 MiB: 2 minutes of 16 kHz mono s16, 5.5 s of 48 kHz
/// stereo 32-bit).
pub const MAX_PAYLOAD_BYTES: usize = 4 << 20;

/// The protocol version written in every header (the `wyoming` package release whose
/// framing and event types this follows).
pub const VERSION: &str = "1.8.0";

/// One event: its type, its data (a JSON object, possibly empty) and its payload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    /// `type`, e.g. `audio-chunk`.
    pub kind: String,
    /// The merged data object.
    pub data: Map<String, Value>,
    /// The binary payload (empty if none).
    pub payload: Vec<u8>,
}

impl Event {
    /// An event of `kind` with no data and no payload.
    pub fn new(kind: &str) -> Self {
        Event { kind: kind.into(), ..Default::default() }
    }

    /// An event of `kind` with `data` (a JSON object; anything else gives empty data).
    pub fn with_data(kind: &str, data: Value) -> Self {
        let data = match data {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Event { kind: kind.into(), data, payload: Vec::new() }
    }

    /// An `error` event: `{"text": text, "code": code}`.
    pub fn error(text: &str, code: &str) -> Self {
        Self::with_data("error", serde_json::json!({ "text": text, "code": code }))
    }
}

/// Why an event could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// The stream failed (or ended inside an event's data or payload).
    Io(io::Error),
    /// The bytes are not a Wyoming event (see the module docs); one line.
    Malformed(String),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Malformed(m) => write!(f, "malformed event: {m}"),
        }
    }
}

fn malformed(m: impl Into<String>) -> ReadError {
    ReadError::Malformed(m.into())
}

/// A length field: absent or null is 0; otherwise a non-negative integer up to `max`.
fn length(header: &Map<String, Value>, key: &str, max: usize) -> Result<usize, ReadError> {
    match header.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => match v.as_u64() {
            Some(n) if n <= max as u64 => Ok(n as usize),
            Some(n) => Err(malformed(format!("{key} {n} is above the limit of {max} bytes"))),
            None => Err(malformed(format!("{key} is not a non-negative integer: {v}"))),
        },
    }
}

fn read_exact_vec<R: Read>(r: &mut R, n: usize, what: &str) -> Result<Vec<u8>, ReadError> {
    let mut buf = vec![0u8; n];
    r.read_exact(&mut buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            ReadError::Io(io::Error::new(
                e.kind(),
                format!("the stream ended inside an event's {what}"),
            ))
        } else {
            ReadError::Io(e)
        }
    })?;
    Ok(buf)
}

/// Reads the next event; `Ok(None)` when the stream ends before a header (blank lines
/// between events are skipped). A last header without its newline is still read, as the
/// Python reader does.
///
/// # Errors
/// [`ReadError::Io`] when reading fails or the stream ends inside an event;
/// [`ReadError::Malformed`] as the module docs list.
pub fn read_event<R: BufRead>(r: &mut R) -> Result<Option<Event>, ReadError> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let n =
            r.take(MAX_HEADER_BYTES as u64).read_until(b'\n', &mut line).map_err(ReadError::Io)?;
        if n == 0 {
            return Ok(None);
        }
        if line.last() != Some(&b'\n') && n == MAX_HEADER_BYTES {
            return Err(malformed(format!("header line longer than {MAX_HEADER_BYTES} bytes")));
        }
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            break;
        }
    }
    let header: Value = serde_json::from_slice(&line)
        .map_err(|e| malformed(format!("header is not JSON ({e})")))?;
    let Value::Object(header) = header else {
        return Err(malformed("header is not a JSON object"));
    };
    let kind = match header.get("type") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(malformed("header has no string `type`")),
    };
    let mut data = match header.get("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(malformed("inline `data` is not a JSON object")),
    };
    let data_length = length(&header, "data_length", MAX_DATA_BYTES)?;
    let payload_length = length(&header, "payload_length", MAX_PAYLOAD_BYTES)?;
    if data_length > 0 {
        let bytes = read_exact_vec(r, data_length, "data")?;
        match serde_json::from_slice(&bytes) {
            Ok(Value::Object(m)) => data.extend(m),
            Ok(_) => return Err(malformed("data is not a JSON object")),
            Err(e) => return Err(malformed(format!("data is not JSON ({e})"))),
        }
    }
    let payload =
        if payload_length > 0 { read_exact_vec(r, payload_length, "payload")? } else { Vec::new() };
    Ok(Some(Event { kind, data, payload }))
}

/// Writes `event` as the Python writer does (header with `version` and the lengths, data
/// only when non-empty, payload only when non-empty) and flushes.
///
/// # Errors
/// The writer's.
pub fn write_event<W: Write>(w: &mut W, event: &Event) -> io::Result<()> {
    let mut header = Map::new();
    header.insert("type".into(), Value::String(event.kind.clone()));
    header.insert("version".into(), Value::String(VERSION.into()));
    let data = if event.data.is_empty() {
        None
    } else {
        Some(serde_json::to_vec(&event.data).map_err(io::Error::other)?)
    };
    if let Some(d) = &data {
        header.insert("data_length".into(), Value::from(d.len()));
    }
    if !event.payload.is_empty() {
        header.insert("payload_length".into(), Value::from(event.payload.len()));
    }
    let mut line = serde_json::to_vec(&header).map_err(io::Error::other)?;
    line.push(b'\n');
    if let Some(d) = data {
        line.extend_from_slice(&d);
    }
    line.extend_from_slice(&event.payload);
    w.write_all(&line)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> Vec<Result<Option<Event>, String>> {
        let mut r = io::BufReader::new(bytes);
        let mut out = Vec::new();
        loop {
            match read_event(&mut r) {
                Ok(Some(e)) => out.push(Ok(Some(e))),
                Ok(None) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    #[test]
    fn round_trip_and_inline_data_merge() {
        let mut e = Event::with_data("audio-chunk", serde_json::json!({"rate": 16000, "width": 2}));
        e.payload = vec![1, 2, 3, 4];
        let mut bytes = Vec::new();
        write_event(&mut bytes, &e).unwrap();
        write_event(&mut bytes, &Event::new("describe")).unwrap();
        // Legacy inline data, merged under data_length's.
        bytes.extend_from_slice(b"{\"type\":\"detect\",\"data\":{\"names\":[\"a\"],\"x\":1},\"data_length\":10}\n{\"x\": 2}  ");
        bytes.extend_from_slice(b"\n\n{\"type\":\"audio-stop\"}");
        let got = read_all(&bytes);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].as_ref().unwrap().as_ref().unwrap(), &e);
        assert_eq!(got[1].as_ref().unwrap().as_ref().unwrap().kind, "describe");
        let d = got[2].as_ref().unwrap().as_ref().unwrap();
        assert_eq!(d.data["x"], 2);
        assert_eq!(d.data["names"][0], "a");
        assert_eq!(got[3].as_ref().unwrap().as_ref().unwrap().kind, "audio-stop");
    }

    #[test]
    fn malformed_events_are_errors() {
        for (bytes, says) in [
            (&b"not json\n"[..], "not JSON"),
            (b"[1, 2]\n", "not a JSON object"),
            (b"{\"data\": {}}\n", "string `type`"),
            (b"{\"type\": 3}\n", "string `type`"),
            (b"{\"type\": \"x\", \"data\": 5}\n", "inline `data`"),
            (b"{\"type\": \"x\", \"data_length\": -1}\n", "data_length"),
            (b"{\"type\": \"x\", \"payload_length\": 1.5}\n", "payload_length"),
            (b"{\"type\": \"x\", \"payload_length\": 99999999999}\n", "limit"),
            (b"{\"type\": \"x\", \"data_length\": 3}\n[1]", "data is not a JSON object"),
            (b"{\"type\": \"x\", \"data_length\": 10}\n{}", "ended inside"),
            (b"{\"type\": \"x\", \"payload_length\": 10}\nabc", "ended inside"),
        ] {
            let got = read_all(bytes);
            let last = got.last().unwrap();
            let m = last.as_ref().unwrap_err();
            assert!(m.contains(says), "{:?}: {m}", String::from_utf8_lossy(bytes));
        }
        let mut long = vec![b' '; MAX_HEADER_BYTES + 10];
        long[0] = b'{';
        assert!(read_all(&long).last().unwrap().as_ref().unwrap_err().contains("longer"));
    }
}
