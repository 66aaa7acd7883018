//! RESP2 on the wire: the reply type, the error type, encoding commands
//! and parsing replies (limits in the constants below).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use std::io::{self, BufRead, Read};

/// The longest bulk string and the largest array accepted: Redis's own
/// default `proto-max-bulk-len`, 512 MiB.
const MAX_LEN: i64 = 512 * 1024 * 1024;

/// The longest line (type byte to `\r\n`) accepted. Simple strings and
/// errors are short; anything long comes as a bulk string.
const MAX_LINE: usize = 1024 * 1024;

/// The deepest nesting of arrays accepted. Nothing we send gets replies
/// nested more than three deep.
const MAX_DEPTH: usize = 32;

/// What is reserved up front for a bulk string or an array, whatever length
/// it announces: the rest grows only as the bytes actually arrive.
pub(super) const PREALLOC: usize = 4 * 1024;

/// One RESP2 reply.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Value {
    /// `$-1` or `*-1`: no value (a missing key, say).
    Nil,
    /// `:n`.
    Int(i64),
    /// `+text`, such as `OK` or `PONG`.
    Simple(String),
    /// `$len`: binary-safe bytes.
    Bulk(Vec<u8>),
    /// `*count`: nested replies.
    Array(Vec<Value>),
    /// `-text`: an error reply inside an array (pipeline, `EXEC`); at the
    /// top level, [`Connection::query`] returns [`RespError::Server`] instead.
    Error(String),
}

impl Value {
    /// Whether this is [`Value::Nil`].
    #[cfg_attr(not(test), allow(dead_code))] // used by the tests
    pub(crate) fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Whether this is the simple string `OK`.
    #[cfg_attr(not(test), allow(dead_code))] // used by the tests
    pub(crate) fn is_ok(&self) -> bool {
        matches!(self, Value::Simple(s) if s == "OK")
    }

    /// The integer, if this is one.
    pub(crate) fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }

    /// The bytes, if this is a bulk string.
    pub(crate) fn as_bulk(&self) -> Option<&[u8]> {
        match self {
            Value::Bulk(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The bytes, if this is a bulk string.
    pub(crate) fn into_bulk(self) -> Option<Vec<u8>> {
        match self {
            Value::Bulk(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub(crate) fn into_array(self) -> Option<Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The value, or [`RespError::Server`] if it is an error reply.
    pub(crate) fn into_result(self) -> Result<Value, RespError> {
        match self {
            Value::Error(message) => Err(RespError::Server(message)),
            value => Ok(value),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("Nil"),
            Value::Int(n) => write!(f, "Int({n})"),
            Value::Simple(s) => write!(f, "Simple({s:?})"),
            Value::Bulk(bytes) if bytes.len() > 64 => {
                write!(
                    f,
                    "Bulk(b\"{}\"… {} bytes)",
                    bytes[..64].escape_ascii(),
                    bytes.len()
                )
            }
            Value::Bulk(bytes) => write!(f, "Bulk(b\"{}\")", bytes.escape_ascii()),
            Value::Array(items) => f.debug_tuple("Array").field(items).finish(),
            Value::Error(s) => write!(f, "Error({s:?})"),
        }
    }
}

/// Why a command failed.
#[derive(Debug)]
pub(crate) enum RespError {
    /// The socket failed, timed out or closed: the connection is broken.
    Io(io::Error),
    /// The server sent something that is not RESP2 (or an empty command was
    /// refused before sending): the connection is broken.
    Protocol(String),
    /// The server answered with an error reply; the connection is fine.
    Server(String),
}

impl RespError {
    /// Whether the connection this came from must be dropped and dialled
    /// again (`Io` and `Protocol`), rather than reused (`Server`).
    pub(crate) fn is_fatal(&self) -> bool {
        !matches!(self, RespError::Server(_))
    }

    /// Whether this is a read or write timeout.
    #[cfg_attr(not(test), allow(dead_code))] // used by the tests
    pub(crate) fn is_timeout(&self) -> bool {
        matches!(self, RespError::Io(e) if is_timeout(e))
    }

    pub(super) fn protocol(message: impl Into<String>) -> RespError {
        RespError::Protocol(message.into())
    }
}

impl fmt::Display for RespError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RespError::Io(e) => write!(f, "redis connection failed: {e}"),
            RespError::Protocol(message) => write!(f, "redis protocol error: {message}"),
            RespError::Server(message) => write!(f, "redis error: {message}"),
        }
    }
}

impl core::error::Error for RespError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            RespError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for RespError {
    fn from(e: io::Error) -> RespError {
        RespError::Io(e)
    }
}

/// Whether `e` is what a socket timeout looks like (`WouldBlock` on Unix,
/// `TimedOut` on Windows).
pub(super) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Appends a command: an array of bulk strings.
pub(super) fn encode<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.push(b'*');
    push_decimal(out, args.len());
    out.extend_from_slice(b"\r\n");
    for arg in args {
        let arg = arg.as_ref();
        out.push(b'$');
        push_decimal(out, arg.len());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, n: usize) {
    let mut n = n as u64;
    let mut digits = [0u8; 20]; // u64::MAX has 20 digits
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// Reads one reply.
pub(super) fn read_value<R: BufRead>(r: &mut R) -> Result<Value, RespError> {
    read_nested(r, 0)
}

/// Reads one reply that sits inside `depth` arrays.
fn read_nested<R: BufRead>(r: &mut R, depth: usize) -> Result<Value, RespError> {
    let line = read_line(r)?;
    let Some((&kind, rest)) = line.split_first() else {
        return Err(RespError::protocol("empty reply line"));
    };
    match kind {
        b'+' => Ok(Value::Simple(String::from_utf8_lossy(rest).into_owned())),
        b'-' => Ok(Value::Error(String::from_utf8_lossy(rest).into_owned())),
        b':' => match parse_int(rest) {
            Some(n) => Ok(Value::Int(n)),
            None => Err(bad_line("integer", &line)),
        },
        b'$' => match parse_len(&line)? {
            None => Ok(Value::Nil),
            Some(len) => read_bulk(r, len).map(Value::Bulk),
        },
        b'*' => match parse_len(&line)? {
            None => Ok(Value::Nil),
            Some(_) if depth >= MAX_DEPTH => Err(RespError::protocol(format!(
                "arrays nested deeper than {MAX_DEPTH}"
            ))),
            Some(count) => {
                let mut items = Vec::with_capacity(count.min(PREALLOC));
                for _ in 0..count {
                    items.push(read_nested(r, depth + 1)?);
                }
                Ok(Value::Array(items))
            }
        },
        _ => Err(bad_line("reply type", &line)),
    }
}

/// Reads a line up to `\r\n` and returns it without them. A bare `\r` or
/// `\n`, or a line longer than [`MAX_LINE`], is a protocol error.
fn read_line<R: BufRead>(r: &mut R) -> Result<Vec<u8>, RespError> {
    let mut line = Vec::new();
    loop {
        let available = match r.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(RespError::Io(e)),
        };
        if available.is_empty() {
            return Err(RespError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        let (taken, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if line.len() + taken > MAX_LINE {
            return Err(RespError::protocol(format!(
                "reply line longer than {MAX_LINE} bytes"
            )));
        }
        line.extend_from_slice(&available[..taken]);
        r.consume(taken);
        if done {
            break;
        }
    }
    // `line` ends with `\n`; it must end with `\r\n`, with no other `\r`.
    line.pop();
    if line.pop() != Some(b'\r') || line.contains(&b'\r') {
        return Err(bad_line("line ending", &line));
    }
    Ok(line)
}

/// Reads a bulk string's `len` bytes and the `\r\n` after them.
fn read_bulk<R: BufRead>(r: &mut R, len: usize) -> Result<Vec<u8>, RespError> {
    let wanted = len as u64 + 2;
    let mut bytes = Vec::with_capacity((len + 2).min(PREALLOC));
    r.take(wanted).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != wanted {
        return Err(RespError::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    if !bytes.ends_with(b"\r\n") {
        return Err(RespError::protocol(format!(
            "bulk string of {len} bytes not followed by CRLF"
        )));
    }
    bytes.truncate(len);
    Ok(bytes)
}

/// The length in a `$` or `*` line: `None` for `-1` (nil); anything else
/// negative, or over [`MAX_LEN`], is a protocol error.
fn parse_len(line: &[u8]) -> Result<Option<usize>, RespError> {
    match parse_int(&line[1..]) {
        Some(-1) => Ok(None),
        Some(n) if (0..=MAX_LEN).contains(&n) => Ok(Some(n as usize)),
        _ => Err(bad_line("length", line)),
    }
}

/// A decimal `i64`: an optional `-`, then digits only (no `+`, no spaces).
fn parse_int(digits: &[u8]) -> Option<i64> {
    let (negative, digits) = match digits {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, digits),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulate downwards, so that i64::MIN parses too.
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if negative {
        Some(n)
    } else {
        n.checked_neg()
    }
}

/// A protocol error quoting (the start of) the offending line.
fn bad_line(what: &str, line: &[u8]) -> RespError {
    let shown = &line[..line.len().min(40)];
    let more = if shown.len() < line.len() { "…" } else { "" };
    RespError::protocol(format!(
        "bad {what} in reply line \"{}{more}\"",
        shown.escape_ascii()
    ))
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;
