//! The wire format's tests: every reply type, split reads, malformed input
//! (never a panic), encoding.

use alloc::string::ToString;
use alloc::vec;
use std::io::{BufReader, Read};

use proptest::prelude::*;

use super::*;

/// A reader that hands out at most one byte per `read`.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (self.0.split_first(), buf.first_mut()) {
            (Some((&b, rest)), Some(slot)) => {
                *slot = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

fn parse(bytes: &[u8]) -> Result<Value, RespError> {
    read_value(&mut &*bytes)
}

/// Parses `bytes` whole, one byte at a time, and split at every
/// boundary; all must agree. Returns the first result.
fn parse_every_way(bytes: &[u8]) -> Result<Value, RespError> {
    let whole = parse(bytes);
    let shape = |r: &Result<Value, RespError>| match r {
        Ok(v) => Ok(v.clone()),
        Err(e) => Err(mem_kind(e)),
    };
    let trickled = read_value(&mut BufReader::with_capacity(1, Trickle(bytes)));
    assert_eq!(shape(&trickled), shape(&whole), "one byte at a time");
    for at in 0..=bytes.len() {
        let split = (&bytes[..at]).chain(&bytes[at..]);
        let result = read_value(&mut BufReader::with_capacity(3, split));
        assert_eq!(shape(&result), shape(&whole), "split at {at}");
    }
    whole
}

/// Which variant an error is, comparably.
fn mem_kind(e: &RespError) -> &'static str {
    match e {
        RespError::Io(_) => "io",
        RespError::Protocol(_) => "protocol",
        RespError::Server(_) => "server",
    }
}

fn bulk(bytes: &[u8]) -> Value {
    Value::Bulk(bytes.to_vec())
}

fn assert_protocol(bytes: &[u8]) {
    match parse_every_way(bytes) {
        Err(RespError::Protocol(_)) => {}
        other => panic!(
            "{:?}: expected a protocol error, got {other:?}",
            bytes.escape_ascii()
        ),
    }
}

fn assert_truncated(bytes: &[u8]) {
    match parse_every_way(bytes) {
        Err(RespError::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
        other => panic!(
            "{:?}: expected end of input, got {other:?}",
            bytes.escape_ascii()
        ),
    }
}

/// The test's own encoder, for every reply type.
fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Nil => out.extend_from_slice(b"$-1\r\n"),
        Value::Int(n) => out.extend_from_slice(format!(":{n}\r\n").as_bytes()),
        Value::Simple(s) => out.extend_from_slice(format!("+{s}\r\n").as_bytes()),
        Value::Error(s) => out.extend_from_slice(format!("-{s}\r\n").as_bytes()),
        Value::Bulk(bytes) => {
            out.extend_from_slice(format!("${}\r\n", bytes.len()).as_bytes());
            out.extend_from_slice(bytes);
            out.extend_from_slice(b"\r\n");
        }
        Value::Array(items) => {
            out.extend_from_slice(format!("*{}\r\n", items.len()).as_bytes());
            for item in items {
                write_value(item, out);
            }
        }
    }
}

// ---- parsing -------------------------------------------------------

#[test]
fn parses_each_type() {
    assert_eq!(
        parse_every_way(b"+OK\r\n").unwrap(),
        Value::Simple("OK".into())
    );
    assert_eq!(parse_every_way(b"+\r\n").unwrap(), Value::Simple("".into()));
    assert_eq!(
        parse_every_way(b"-ERR wrong type\r\n").unwrap(),
        Value::Error("ERR wrong type".into())
    );
    assert_eq!(parse_every_way(b":0\r\n").unwrap(), Value::Int(0));
    assert_eq!(parse_every_way(b":-42\r\n").unwrap(), Value::Int(-42));
    assert_eq!(
        parse_every_way(b":9223372036854775807\r\n").unwrap(),
        Value::Int(i64::MAX)
    );
    assert_eq!(
        parse_every_way(b":-9223372036854775808\r\n").unwrap(),
        Value::Int(i64::MIN)
    );
    assert_eq!(parse_every_way(b"$5\r\nhello\r\n").unwrap(), bulk(b"hello"));
    assert_eq!(parse_every_way(b"$0\r\n\r\n").unwrap(), bulk(b""));
    assert_eq!(
        parse_every_way(b"$6\r\na\r\n\0\xffb\r\n").unwrap(),
        bulk(b"a\r\n\0\xffb")
    );
    assert_eq!(parse_every_way(b"*0\r\n").unwrap(), Value::Array(vec![]));
}

#[test]
fn parses_nil_both_ways() {
    assert_eq!(parse_every_way(b"$-1\r\n").unwrap(), Value::Nil);
    assert_eq!(parse_every_way(b"*-1\r\n").unwrap(), Value::Nil);
}

#[test]
fn parses_nested_arrays() {
    let input = b"*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n*1\r\n-NOSCRIPT gone\r\n";
    let expected = Value::Array(vec![
        Value::Int(1),
        Value::Array(vec![bulk(b"a"), Value::Nil]),
        Value::Array(vec![Value::Error("NOSCRIPT gone".into())]),
    ]);
    assert_eq!(parse_every_way(input).unwrap(), expected);
}

#[test]
fn reads_consecutive_replies_from_one_stream() {
    let mut input: &[u8] = b"+OK\r\n:7\r\n$2\r\nhi\r\n";
    assert!(read_value(&mut input).unwrap().is_ok());
    assert_eq!(read_value(&mut input).unwrap(), Value::Int(7));
    assert_eq!(read_value(&mut input).unwrap(), bulk(b"hi"));
    assert_truncated(input);
}

#[test]
fn caps_nesting_depth() {
    let nested = |depth: usize| {
        let mut bytes = b"*1\r\n".repeat(depth);
        bytes.extend_from_slice(b":1\r\n");
        bytes
    };
    assert!(parse_every_way(&nested(MAX_DEPTH)).is_ok());
    assert_protocol(&nested(MAX_DEPTH + 1));
    // Far deeper than any stack could take, were it not capped.
    assert!(matches!(
        parse(&nested(1_000_000)),
        Err(RespError::Protocol(_))
    ));
}

#[test]
fn rejects_bad_line_endings() {
    assert_protocol(b"+OK\n");
    assert_protocol(b"+O\rK\r\n");
    assert_protocol(b":1\r\r\n");
    assert_protocol(b"$3\r\nabcX\r\n");
    assert_protocol(b"$3\r\nabc\rX");
    assert_protocol(b"$3\n\nabc\r\n");
    assert_protocol(b"\r\n");
    assert_protocol(b"\n");
}

#[test]
fn rejects_bad_integers_and_lengths() {
    for bad in [
        &b":\r\n"[..],
        b":-\r\n",
        b":+1\r\n",
        b": 1\r\n",
        b":1 \r\n",
        b":1a\r\n",
        b":9223372036854775808\r\n",
        b":-9223372036854775809\r\n",
        b":99999999999999999999999\r\n",
        b"$\r\n",
        b"$-2\r\n",
        b"$-0x1\r\n",
        b"$abc\r\n",
        b"$536870913\r\n",
        b"$99999999999999999999\r\n",
        b"*-2\r\n",
        b"*536870913\r\n",
        b"*1.5\r\n",
    ] {
        assert_protocol(bad);
    }
}

#[test]
fn rejects_unknown_type_bytes() {
    // RESP3 types among them: we never ask for RESP3.
    for bad in [
        &b"_\r\n"[..],
        b"#t\r\n",
        b",1.5\r\n",
        b"%1\r\n",
        b"~0\r\n",
        b">0\r\n",
        b"!3\r\n",
        b"OK\r\n",
        b"\0\r\n",
    ] {
        assert_protocol(bad);
    }
}

#[test]
fn rejects_overlong_lines() {
    let mut line = vec![b'+'; MAX_LINE + 10];
    line.extend_from_slice(b"\r\n");
    assert!(matches!(parse(&line), Err(RespError::Protocol(_))));
    let mut no_newline = vec![b'+'];
    no_newline.resize(3 * MAX_LINE, b'x');
    assert!(matches!(parse(&no_newline), Err(RespError::Protocol(_))));
}

#[test]
fn truncated_input_is_end_of_input() {
    assert_truncated(b"");
    assert_truncated(b"+OK");
    assert_truncated(b"+OK\r");
    assert_truncated(b"$5\r\nhel");
    assert_truncated(b"$5\r\nhello");
    assert_truncated(b"$5\r\nhello\r");
    assert_truncated(b"*2\r\n:1\r\n");
    // A huge announced length costs nothing until the bytes arrive.
    assert_truncated(b"$536870912\r\nabc");
    assert_truncated(b"*536870912\r\n:1\r\n");
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let _ = parse(&bytes);
        let _ = read_value(&mut BufReader::with_capacity(1, Trickle(&bytes)));
    }

    #[test]
    fn random_bytes_after_a_type_byte_never_panic(
        kind in prop::sample::select(&b"+-:$*"[..]),
        tail in proptest::collection::vec(
            prop_oneof![any::<u8>(), prop::sample::select(&b"0123456789-\r\n$*:"[..])],
            0..64,
        ),
    ) {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&tail);
        let _ = parse(&bytes);
    }

    #[test]
    fn encoded_values_round_trip(value in arb_value()) {
        let mut bytes = Vec::new();
        write_value(&value, &mut bytes);
        prop_assert_eq!(parse_every_way(&bytes).unwrap(), value);
    }

    #[test]
    fn damaged_values_never_panic(
        value in arb_value(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = Vec::new();
        write_value(&value, &mut bytes);
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let _ = parse(&bytes);
        let _ = parse(&bytes[..cut.index(bytes.len())]);
    }
}

fn arb_value() -> impl Strategy<Value = Value> {
    let text = "[a-zA-Z0-9 _:.-]{0,12}";
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<i64>().prop_map(Value::Int),
        text.prop_map(Value::Simple),
        text.prop_map(Value::Error),
        proptest::collection::vec(any::<u8>(), 0..24).prop_map(Value::Bulk),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(Value::Array)
    })
}

// ---- encoding and values -----------------------------------------

#[test]
fn encodes_commands_as_arrays_of_bulk_strings() {
    let mut out = Vec::new();
    encode(&mut out, &[&b"SET"[..], b"k", b""]);
    assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    out.clear();
    encode(&mut out, &[b"a\r\nb".to_vec()]);
    assert_eq!(out, b"*1\r\n$4\r\na\r\nb\r\n");
    out.clear();
    let long = vec![b'x'; 1234];
    encode(&mut out, &[long.as_slice()]);
    assert!(out.starts_with(b"*1\r\n$1234\r\nxxx"));
}

#[test]
fn encoded_commands_parse_back_as_arrays() {
    let args: [&[u8]; 3] = [b"EVALSHA", b"\0\xff", b"1"];
    let mut out = Vec::new();
    encode(&mut out, &args);
    let parsed = parse(&out).unwrap().into_array().unwrap();
    let parsed: Vec<Vec<u8>> = parsed.into_iter().map(|v| v.into_bulk().unwrap()).collect();
    assert_eq!(parsed, args);
}

#[test]
fn pushes_decimals() {
    for n in [0, 7, 10, 99, 100, 123_456_789, usize::MAX] {
        let mut out = Vec::new();
        push_decimal(&mut out, n);
        assert_eq!(out, n.to_string().as_bytes());
    }
}

#[test]
fn value_accessors() {
    assert!(Value::Nil.is_nil());
    assert!(Value::Simple("OK".into()).is_ok());
    assert!(!Value::Simple("PONG".into()).is_ok());
    assert_eq!(Value::Int(3).as_int(), Some(3));
    assert_eq!(bulk(b"3").as_int(), None);
    assert_eq!(bulk(b"x").as_bulk(), Some(&b"x"[..]));
    assert_eq!(bulk(b"x").into_bulk(), Some(b"x".to_vec()));
    assert_eq!(Value::Nil.into_bulk(), None);
    assert_eq!(
        Value::Array(vec![Value::Nil]).into_array(),
        Some(vec![Value::Nil])
    );
    assert!(matches!(
        Value::Error("ERR x".into()).into_result(),
        Err(RespError::Server(m)) if m == "ERR x"
    ));
    assert_eq!(Value::Int(1).into_result().unwrap(), Value::Int(1));
    assert_eq!(format!("{:?}", bulk(b"a\r\n")), "Bulk(b\"a\\r\\n\")");
}

#[test]
fn errors_say_whether_the_connection_survives() {
    let server = RespError::Server("ERR x".into());
    assert!(!server.is_fatal());
    assert_eq!(server.to_string(), "redis error: ERR x");
    assert!(RespError::protocol("bad").is_fatal());
    let timeout = RespError::from(io::Error::from(io::ErrorKind::WouldBlock));
    assert!(timeout.is_fatal() && timeout.is_timeout());
    assert!(core::error::Error::source(&timeout).is_some());
    assert!(!RespError::protocol("bad").is_timeout());
}
