//! The connection's tests: against a fake server, then against real
//! `redis-server`s.

use super::*;
use alloc::vec;
use std::io::Read;
use std::net::TcpListener;
use std::thread;
use std::time::Instant;

use super::redis_server::RedisServer;

fn bulk(bytes: &[u8]) -> Value {
    Value::Bulk(bytes.to_vec())
}

// ---- against a fake server ---------------------------------------

/// A one-connection server that answers every read with `reply`.
fn fake_server(reply: &'static [u8]) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        let mut buf = [0; 1024];
        while socket.read(&mut buf).is_ok_and(|n| n > 0) {
            if socket.write_all(reply).is_err() {
                break;
            }
        }
    });
    addr
}

#[test]
fn garbage_breaks_the_connection() {
    let addr = fake_server(b"HTTP/1.1 400 Bad Request\r\n");
    let mut conn = Connection::connect(addr, Duration::from_secs(5)).unwrap();
    assert!(matches!(
        conn.query(&[b"PING"]),
        Err(RespError::Protocol(_))
    ));
    assert!(conn.is_broken());
    let again = conn.query(&[b"PING"]).unwrap_err();
    assert!(matches!(&again, RespError::Io(e) if e.kind() == io::ErrorKind::NotConnected));
}

#[test]
fn empty_commands_are_refused_unsent() {
    let addr = fake_server(b"+PONG\r\n");
    let mut conn = Connection::connect(addr, Duration::from_secs(5)).unwrap();
    assert!(matches!(conn.query(&[]), Err(RespError::Protocol(_))));
    assert!(matches!(
        conn.pipeline(&[vec![]]),
        Err(RespError::Protocol(_))
    ));
    assert!(!conn.is_broken());
    assert_eq!(
        conn.query(&[b"PING"]).unwrap(),
        Value::Simple("PONG".into())
    );
    assert_eq!(conn.pipeline(&[]).unwrap(), vec![]);
}

// ---- against a real redis-server ---------------------------------

fn connect(server: &RedisServer) -> Connection {
    Connection::connect(server.addr(), Duration::from_secs(5)).unwrap()
}

#[test]
fn redis_query() {
    let server = RedisServer::start();
    let mut conn = connect(&server);
    assert_eq!(
        conn.query(&[b"PING"]).unwrap(),
        Value::Simple("PONG".into())
    );
    assert!(conn.query(&[b"SET", b"k", b"v\r\n"]).unwrap().is_ok());
    assert_eq!(conn.query(&[b"GET", b"k"]).unwrap(), bulk(b"v\r\n"));
    assert_eq!(conn.query(&[b"GET", b"missing"]).unwrap(), Value::Nil);
    assert_eq!(
        conn.query(&[b"INCRBY", b"n", b"-5"]).unwrap(),
        Value::Int(-5)
    );
    assert_eq!(
        conn.query(&[b"LRANGE", b"none", b"0", b"-1"]).unwrap(),
        Value::Array(vec![])
    );
    let err = conn.query(&[b"INCR", b"k"]).unwrap_err();
    assert!(
        matches!(&err, RespError::Server(m) if m.starts_with("ERR")),
        "{err:?}"
    );
    assert!(!err.is_fatal() && !conn.is_broken());
    let err = conn.query(&[b"NOSUCHCOMMAND"]).unwrap_err();
    assert!(matches!(err, RespError::Server(_)));
    assert_eq!(
        conn.query(&[b"ECHO", b"still fine"]).unwrap(),
        bulk(b"still fine")
    );
}

#[test]
fn redis_pipeline_keeps_errors_in_place() {
    let server = RedisServer::start();
    let mut conn = connect(&server);
    let cmd = |args: &[&str]| {
        args.iter()
            .map(|a| a.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    let replies = conn
        .pipeline(&[
            cmd(&["SET", "k", "text"]),
            cmd(&["INCR", "k"]),
            cmd(&["GET", "k"]),
            cmd(&["MULTI"]),
            cmd(&["INCR", "n"]),
            cmd(&["INCR", "k"]),
            cmd(&["EXEC"]),
        ])
        .unwrap();
    assert_eq!(replies.len(), 7);
    assert!(replies[0].is_ok());
    assert!(matches!(&replies[1], Value::Error(m) if m.starts_with("ERR")));
    assert_eq!(replies[2], bulk(b"text"));
    assert_eq!(replies[4], Value::Simple("QUEUED".into()));
    let exec = replies[6].clone().into_array().unwrap();
    assert_eq!(exec[0], Value::Int(1));
    assert!(matches!(&exec[1], Value::Error(_)));
    assert!(!conn.is_broken());
}

#[test]
fn redis_script_reloads_after_noscript() {
    let server = RedisServer::start();
    let mut conn = connect(&server);
    let script = Script::new(
        "local n = redis.call('INCR', KEYS[1]) \
         return {n, ARGV[1], false, {KEYS[1]}}",
    );
    let expect = |n: i64| {
        Value::Array(vec![
            Value::Int(n),
            bulk(b"arg"),
            Value::Nil,
            Value::Array(vec![bulk(b"counter")]),
        ])
    };
    assert_eq!(
        conn.eval(&script, &[b"counter"], &[b"arg"]).unwrap(),
        expect(1)
    );
    assert_eq!(
        conn.eval(&script, &[b"counter"], &[b"arg"]).unwrap(),
        expect(2)
    );
    assert_eq!(server.command(&["SCRIPT", "FLUSH"]), "+OK\r\n");
    assert_eq!(
        conn.eval(&script, &[b"counter"], &[b"arg"]).unwrap(),
        expect(3)
    );
    let stats = server.command(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_script|load:calls=2,"), "{stats}");

    // The cached SHA1 serves another connection (and another server).
    let other = RedisServer::start();
    let mut conn = connect(&other);
    assert_eq!(
        conn.eval(&script, &[b"counter"], &[b"arg"]).unwrap(),
        expect(1)
    );

    let failing = Script::new("return redis.error_reply('BOOM it failed')");
    let err = conn.eval(&failing, &[], &[]).unwrap_err();
    assert!(
        matches!(&err, RespError::Server(m) if m == "BOOM it failed"),
        "{err:?}"
    );
    assert!(!conn.is_broken());
}

#[test]
fn redis_pubsub() {
    let server = RedisServer::start();
    let mut subscriber = connect(&server);
    let mut publisher = connect(&server);
    subscriber.send(&[b"SUBSCRIBE", b"wake"]).unwrap();
    let ack = Value::Array(vec![bulk(b"subscribe"), bulk(b"wake"), Value::Int(1)]);
    assert_eq!(subscriber.recv().unwrap(), ack);

    let started = Instant::now();
    assert_eq!(
        subscriber.recv_timeout(Duration::from_millis(50)).unwrap(),
        None
    );
    assert!(started.elapsed() >= Duration::from_millis(40));
    assert_eq!(subscriber.recv_timeout(Duration::ZERO).unwrap(), None);
    assert!(!subscriber.is_broken());

    assert_eq!(
        publisher.query(&[b"PUBLISH", b"wake", b"now"]).unwrap(),
        Value::Int(1)
    );
    let message = Value::Array(vec![bulk(b"message"), bulk(b"wake"), bulk(b"now")]);
    assert_eq!(
        subscriber.recv_timeout(Duration::from_secs(5)).unwrap(),
        Some(message)
    );
    assert_eq!(
        publisher.query(&[b"PUBLISH", b"wake", b"again"]).unwrap(),
        Value::Int(1)
    );
    let message = Value::Array(vec![bulk(b"message"), bulk(b"wake"), bulk(b"again")]);
    assert_eq!(subscriber.recv().unwrap(), message);
}

#[test]
fn redis_large_bulk_round_trip() {
    let server = RedisServer::start();
    let mut conn = connect(&server);
    let big: Vec<u8> = (0..1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    assert!(conn.query(&[b"SET", b"big", &big]).unwrap().is_ok());
    assert_eq!(
        conn.query(&[b"GET", b"big"]).unwrap().into_bulk().unwrap(),
        big
    );
    let replies = conn
        .pipeline(&[
            vec![b"SET".to_vec(), b"big2".to_vec(), big.clone()],
            vec![b"GET".to_vec(), b"big2".to_vec()],
            vec![b"STRLEN".to_vec(), b"big2".to_vec()],
        ])
        .unwrap();
    assert_eq!(replies[1].as_bulk(), Some(big.as_slice()));
    assert_eq!(replies[2], Value::Int(1024 * 1024));
}

#[test]
fn redis_stopped_server_times_out() {
    let server = RedisServer::start();
    let mut conn = connect(&server);
    conn.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    assert!(conn.query(&[b"PING"]).is_ok());
    server.stop_signal();
    let started = Instant::now();
    let err = conn.query(&[b"PING"]).unwrap_err();
    let waited = started.elapsed();
    server.cont_signal();
    assert!(err.is_timeout() && err.is_fatal(), "{err:?}");
    assert!(waited < Duration::from_secs(2), "waited {waited:?}");
    // The late PONG may still arrive: the connection is not trusted again.
    assert!(conn.is_broken());
    assert!(conn.query(&[b"PING"]).is_err());
    assert_eq!(
        connect(&server).query(&[b"PING"]).unwrap(),
        Value::Simple("PONG".into())
    );
}

#[test]
fn redis_killed_server_breaks_the_connection() {
    let mut server = RedisServer::start();
    let mut conn = connect(&server);
    assert!(conn.query(&[b"SET", b"k", b"v"]).unwrap().is_ok());
    server.kill9();
    let err = conn.query(&[b"GET", b"k"]).unwrap_err();
    assert!(matches!(err, RespError::Io(_)), "{err:?}");
    server.restart();
    assert_eq!(connect(&server).query(&[b"GET", b"k"]).unwrap(), bulk(b"v"));
}
