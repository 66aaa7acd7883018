//! The test Redis harness (`tests/support/redis_server.rs`) itself: start,
//! raw commands, durability across SIGKILL + restart, SIGSTOP/SIGCONT, and
//! cleanup on drop.

use core::time::Duration;
use std::io::ErrorKind;
use std::path::Path;

use crate::redis_server;

use redis_server::{Config, Fsync, RedisServer};

/// Whether a process with this pid exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z"),
        Err(_) => false,
    }
}

#[test]
fn starts_and_answers_ping() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    assert_eq!(server.command(&["PING"]), "+PONG\r\n");
    assert_eq!(server.addr().port(), server.port());
    assert!(server.data_dir().join("redis.conf").is_file());
    let aof = server.command(&["CONFIG", "GET", "appendfsync"]);
    assert_eq!(aof, "*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n");
}

#[test]
fn extra_directives_apply() {
    let config = Config::new()
        .appendfsync(Fsync::No)
        .config("maxmemory", "10mb");
    let Some(server) = RedisServer::start_with_or_skip(config) else {
        return;
    };
    let reply = server.command(&["CONFIG", "GET", "maxmemory"]);
    assert!(reply.ends_with("$8\r\n10485760\r\n"), "{reply:?}");
    let reply = server.command(&["CONFIG", "GET", "appendfsync"]);
    assert!(reply.ends_with("$2\r\nno\r\n"), "{reply:?}");
}

#[test]
fn acknowledged_write_survives_kill9_and_restart() {
    let Some(mut server) =
        RedisServer::start_with_or_skip(Config::new().appendfsync(Fsync::Always))
    else {
        return;
    };
    let port = server.port();
    assert_eq!(server.command(&["SET", "k", "survivor"]), "+OK\r\n");
    let old_pid = server.pid();
    server.kill9();
    assert!(!server.is_running());
    assert!(!alive(old_pid));
    server.restart();
    assert_ne!(server.pid(), old_pid);
    assert_eq!(server.port(), port);
    assert_eq!(server.command(&["GET", "k"]), "$8\r\nsurvivor\r\n");
}

#[test]
fn sigstop_freezes_and_sigcont_resumes() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    server.stop_signal();
    let err = server
        .try_command(&["PING"], Duration::from_millis(300))
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    server.cont_signal();
    let reply = server
        .try_command(&["PING"], Duration::from_secs(5))
        .unwrap();
    assert_eq!(reply, "+PONG\r\n");
}

#[test]
fn drop_kills_the_process_and_removes_the_data_dir() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let pid = server.pid();
    let dir = server.data_dir().to_path_buf();
    server.stop_signal(); // drop must cope with a stopped server
    drop(server);
    assert!(!alive(pid));
    assert!(!Path::new(&dir).exists());
}

#[test]
fn a_server_that_cannot_start_panics_with_its_log() {
    if redis_server::find_binary().is_none()
        && std::env::var_os("TICKWHEEL_REQUIRE_REDIS").is_none()
    {
        return; // said once by the other tests
    }
    let panicked = std::panic::catch_unwind(|| {
        RedisServer::start_with(Config::new().config("no-such-directive", "1"));
    })
    .expect_err("a bad directive must not start");
    let message = panicked
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("Bad directive"), "{message}");
}
