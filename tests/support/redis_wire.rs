//! The few RESP2 bytes the test server's harness speaks itself
//! (`redis_server.rs`): a raw PING, a command, a reply copied whole.

// As in `redis_server.rs`: whatever crate includes it.
extern crate alloc;

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::net::SocketAddr;
use core::time::Duration;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// One raw PING on a fresh connection; the reply's first line.
pub(super) fn ping(addr: SocketAddr) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    stream.write_all(b"*1\r\n$4\r\nPING\r\n")?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line)?;
    Ok(line)
}

/// A command as a RESP array of bulk strings.
pub(super) fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Copies one complete RESP2 reply from `reader` into `out`, raw.
pub(super) fn read_reply(reader: &mut impl BufRead, out: &mut Vec<u8>) -> io::Result<()> {
    let start = out.len();
    if reader.read_until(b'\n', out)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let line = String::from_utf8_lossy(&out[start..]).trim_end().to_owned();
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad reply line {line:?}"),
        )
    };
    let len = |s: &str| s.parse::<i64>().map_err(|_| bad());
    match line.as_bytes().first() {
        Some(b'+' | b'-' | b':') => Ok(()),
        Some(b'$') => {
            let n = len(&line[1..])?;
            if n >= 0 {
                let mut body = Vec::new();
                (&mut *reader).take(n as u64 + 2).read_to_end(&mut body)?;
                if body.len() as u64 != n as u64 + 2 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                out.extend_from_slice(&body);
            }
            Ok(())
        }
        Some(b'*') => {
            for _ in 0..len(&line[1..])?.max(0) {
                read_reply(reader, out)?;
            }
            Ok(())
        }
        _ => Err(bad()),
    }
}
