//! A small synchronous RESP2 client over std's `TcpStream`: what the queue
//! needs from Redis, without a client crate.
//!
//! # The protocol
//!
//! Every reply starts with a type byte and a line ended by `\r\n`:
//!
//! | byte | reply         | after the type byte                                  |
//! |------|---------------|------------------------------------------------------|
//! | `+`  | simple string | text, `\r\n`                                         |
//! | `-`  | error         | text, `\r\n` (`ERR …`, `NOSCRIPT …`, `LOADING …`)    |
//! | `:`  | integer       | signed decimal, `\r\n`                               |
//! | `$`  | bulk string   | length, `\r\n`, that many bytes, `\r\n`; `$-1`: nil  |
//! | `*`  | array         | count, `\r\n`, that many replies; `*-1`: nil         |
//!
//! Commands go out as an array of bulk strings, encoded into one buffer and
//! written with one `write_all`. We never send `HELLO`, so the server stays
//! on RESP2; RESP3 type bytes are protocol errors.
//!
//! # Ground rules
//!
//! - A [`Connection`] is used by one thread at a time (`&mut self`); replies
//!   come back in the order the commands went out.
//! - An [`Io`](RespError::Io) or [`Protocol`](RespError::Protocol) error
//!   may leave half a reply in the socket, so it *breaks* the connection:
//!   every later call fails at once, and the caller dials again. A
//!   [`Server`](RespError::Server) error is an ordinary reply and leaves
//!   the connection usable.
//! - The parser trusts nothing it reads: lengths are capped at
//!   [`MAX_LEN`], lines at [`MAX_LINE`], nesting at [`MAX_DEPTH`]; memory
//!   grows only as bytes arrive, and no input makes it panic.

mod wire;

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::net::SocketAddr;
use core::time::Duration;
use std::io::{self, BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Mutex, PoisonError};

use wire::{encode, is_timeout, read_value, PREALLOC};
pub(crate) use wire::{RespError, Value};

/// The read buffer's size.
const READ_BUFFER: usize = 16 * 1024;

/// The write buffer is dropped after a command larger than this, so one
/// big pipeline does not pin its memory for the connection's lifetime.
const KEEP_WRITE_BUFFER: usize = 1024 * 1024;

/// A Lua script run with `EVALSHA`. Its SHA1 comes from the server's
/// `SCRIPT LOAD` on first use, and is loaded again after a `NOSCRIPT`
/// (a restarted server, a `SCRIPT FLUSH`, another server).
#[derive(Debug)]
pub(crate) struct Script {
    source: &'static str,
    /// The SHA1 the last `SCRIPT LOAD` returned (the same on every server,
    /// since it is the hash of `source`). Locked only to copy it in or out.
    sha1: Mutex<Option<String>>,
}

impl Script {
    /// A script, not yet loaded anywhere.
    pub(crate) const fn new(source: &'static str) -> Script {
        Script {
            source,
            sha1: Mutex::new(None),
        }
    }

    fn cached_sha1(&self) -> Option<String> {
        self.sha1
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn remember(&self, sha1: &str) {
        *self.sha1.lock().unwrap_or_else(PoisonError::into_inner) = Some(sha1.to_owned());
    }
}

/// A connection to one Redis server.
pub(crate) struct Connection {
    stream: BufReader<TcpStream>,
    /// Commands are encoded here, then written with one `write_all`.
    out: Vec<u8>,
    /// The read timeout set by `connect` or `set_read_timeout`
    /// (`recv_timeout` changes it for a moment).
    read_timeout: Option<Duration>,
    /// Set by the first `Io` or `Protocol` error: the stream may be in the
    /// middle of a reply, so nothing more is read or written.
    broken: bool,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("peer", &self.stream.get_ref().peer_addr().ok())
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Dials `addr` with TCP_NODELAY; `timeout` bounds the connect, and
    /// every read and write until changed.
    pub(crate) fn connect(addr: SocketAddr, timeout: Duration) -> Result<Connection, RespError> {
        let stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        Ok(Connection {
            stream: BufReader::with_capacity(READ_BUFFER, stream),
            out: Vec::new(),
            read_timeout: Some(timeout),
            broken: false,
        })
    }

    /// Sets how long a read may wait (`None`: forever; zero is an error).
    #[cfg_attr(not(test), allow(dead_code))] // used by the tests
    pub(crate) fn set_read_timeout(&mut self, timeout: Option<Duration>) -> Result<(), RespError> {
        self.stream.get_ref().set_read_timeout(timeout)?;
        self.read_timeout = timeout;
        Ok(())
    }

    /// Whether an earlier `Io` or `Protocol` error broke this connection.
    #[cfg_attr(not(test), allow(dead_code))] // used by the tests
    pub(crate) fn is_broken(&self) -> bool {
        self.broken
    }

    /// Sends one command and reads its reply; an error reply becomes
    /// [`RespError::Server`].
    pub(crate) fn query(&mut self, args: &[&[u8]]) -> Result<Value, RespError> {
        self.send(args)?;
        self.recv()
    }

    /// Sends all `cmds` with one write, then reads one reply for each, in
    /// order. Error replies stay in the result as [`Value::Error`].
    pub(crate) fn pipeline(&mut self, cmds: &[Vec<Vec<u8>>]) -> Result<Vec<Value>, RespError> {
        self.usable()?;
        if cmds.iter().any(Vec::is_empty) {
            return Err(RespError::protocol("refused to send an empty command"));
        }
        self.out.clear();
        for cmd in cmds {
            encode(&mut self.out, cmd);
        }
        self.write_out()?;
        let mut replies = Vec::with_capacity(cmds.len().min(PREALLOC));
        for _ in cmds {
            let reply = read_value(&mut self.stream);
            replies.push(self.check(reply)?);
        }
        Ok(replies)
    }

    /// Sends one command without reading a reply (pub/sub: `SUBSCRIBE`).
    /// An empty `args` is refused before anything is written.
    pub(crate) fn send(&mut self, args: &[&[u8]]) -> Result<(), RespError> {
        self.usable()?;
        if args.is_empty() {
            return Err(RespError::protocol("refused to send an empty command"));
        }
        self.out.clear();
        encode(&mut self.out, args);
        self.write_out()
    }

    /// Reads the next reply (pub/sub: the next message); an error reply
    /// becomes [`RespError::Server`].
    pub(crate) fn recv(&mut self) -> Result<Value, RespError> {
        self.usable()?;
        let reply = read_value(&mut self.stream);
        self.check(reply)?.into_result()
    }

    /// Like [`recv`](Self::recv), but `Ok(None)` if no reply starts within
    /// `timeout`; the connection stays usable then. Once a reply has
    /// started, the rest of it is read with the usual read timeout.
    pub(crate) fn recv_timeout(&mut self, timeout: Duration) -> Result<Option<Value>, RespError> {
        self.usable()?;
        if self.stream.buffer().is_empty() {
            // A zero timeout means "block forever" to the OS: wait 1 ns.
            let wait = timeout.max(Duration::from_nanos(1));
            let set = self.stream.get_ref().set_read_timeout(Some(wait));
            self.check(set.map_err(RespError::Io))?;
            let filled = self.stream.fill_buf().map(|bytes| bytes.len());
            let reset = self.stream.get_ref().set_read_timeout(self.read_timeout);
            self.check(reset.map_err(RespError::Io))?;
            match filled {
                Ok(0) => {
                    let closed = io::Error::from(io::ErrorKind::UnexpectedEof);
                    return self.check(Err(RespError::Io(closed)));
                }
                Ok(_) => {}
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {
                    return Ok(None)
                }
                Err(e) => return self.check(Err(RespError::Io(e))),
            }
        }
        self.recv().map(Some)
    }

    /// Runs `script` with `EVALSHA`, loading it first if this process has not
    /// yet, and again (then retrying once) if the server answers `NOSCRIPT`.
    pub(crate) fn eval(
        &mut self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<Value, RespError> {
        let sha1 = match script.cached_sha1() {
            Some(sha1) => sha1,
            None => self.load(script)?,
        };
        match self.evalsha(&sha1, keys, args) {
            Err(RespError::Server(message)) if message.starts_with("NOSCRIPT") => {
                let sha1 = self.load(script)?;
                self.evalsha(&sha1, keys, args)
            }
            result => result,
        }
    }

    /// `script`'s SHA1, loading it first if this process has not yet (for
    /// `EVALSHA` in a pipeline).
    pub(crate) fn sha1_of(&mut self, script: &Script) -> Result<String, RespError> {
        match script.cached_sha1() {
            Some(sha1) => Ok(sha1),
            None => self.load(script),
        }
    }

    /// `SCRIPT LOAD`s `script` and remembers the SHA1 the server returns.
    pub(crate) fn load(&mut self, script: &Script) -> Result<String, RespError> {
        let reply = self.query(&[b"SCRIPT", b"LOAD", script.source.as_bytes()])?;
        let sha1 = reply
            .into_bulk()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .filter(|s| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| RespError::protocol("SCRIPT LOAD did not return a SHA1"))?;
        script.remember(&sha1);
        Ok(sha1)
    }

    fn evalsha(&mut self, sha1: &str, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value, RespError> {
        let numkeys = format!("{}", keys.len());
        let mut parts: Vec<&[u8]> = Vec::with_capacity(3 + keys.len() + args.len());
        parts.push(b"EVALSHA");
        parts.push(sha1.as_bytes());
        parts.push(numkeys.as_bytes());
        parts.extend_from_slice(keys);
        parts.extend_from_slice(args);
        self.query(&parts)
    }

    /// Fails at once if an earlier error broke the connection.
    fn usable(&self) -> Result<(), RespError> {
        if self.broken {
            let e = io::Error::new(
                io::ErrorKind::NotConnected,
                "connection broken by an earlier error",
            );
            return Err(RespError::Io(e));
        }
        Ok(())
    }

    /// Passes `result` through, marking the connection broken on a fatal error.
    fn check<T>(&mut self, result: Result<T, RespError>) -> Result<T, RespError> {
        if let Err(e) = &result {
            self.broken |= e.is_fatal();
        }
        result
    }

    /// Writes the encoded commands.
    fn write_out(&mut self) -> Result<(), RespError> {
        let stream = self.stream.get_mut();
        let written = stream.write_all(&self.out).and_then(|()| stream.flush());
        if self.out.capacity() > KEEP_WRITE_BUFFER {
            self.out = Vec::new();
        }
        self.check(written.map_err(RespError::Io))
    }
}

/// The test harness that starts throwaway `redis-server`s.
#[cfg(test)]
#[path = "../../../tests/support/redis_server.rs"]
mod redis_server;

#[cfg(test)]
mod tests;
