//! Reaching the Redis that users run, each test on its own real
//! `redis-server`: a password (`requirepass`), an ACL user, TLS only (with
//! certificates made by `openssl` now, and client certificates), a host
//! name, a database number, a Unix socket, a single-node Redis Cluster,
//! and a server whose eviction policy would lose jobs.

use core::time::Duration;
use std::time::Instant;

use tickwheel::redis::{Acked, Queue, QueueBuilder, QueueError, Scheduled};

use crate::redis_server;
use crate::tls_certs;
use redis_server::{Config, RedisServer};
use tls_certs::TlsFiles;

const MS: Duration = Duration::from_millis(1);

/// Schedules, takes and acks one job on `queue`: the round trip every
/// kind of server must carry.
#[track_caller]
fn round_trip(queue: &Queue) {
    assert!(matches!(
        queue.schedule_in("job", 20 * MS, b"payload").unwrap(),
        Scheduled::Created { .. }
    ));
    let consumer = queue.consumer().unwrap();
    let jobs = consumer.fetch(1, Duration::from_secs(5)).unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].payload, b"payload");
    assert_eq!(consumer.ack(&jobs[0]).unwrap(), Acked::Acked);
    assert_eq!(queue.len().unwrap(), (0, 0));
}

/// Fails fast: a refused login must not wait out the retry window.
fn quick(builder: QueueBuilder) -> QueueBuilder {
    builder.retry(Duration::from_secs(3), Duration::from_secs(1))
}

#[test]
fn a_password_logs_in_and_a_wrong_or_missing_one_is_a_clear_error() {
    let Some(server) =
        RedisServer::start_with_or_skip(Config::new().config("requirepass", "s3cret"))
    else {
        return;
    };
    let port = server.port();
    let queue = Queue::connect(&format!("redis://:s3cret@127.0.0.1:{port}/"), "orders").unwrap();
    round_trip(&queue);
    for url in [
        format!("redis://:wrong@127.0.0.1:{port}/"),
        format!("redis://127.0.0.1:{port}/"),
    ] {
        let started = Instant::now();
        let err = quick(Queue::builder(&url, "orders")).connect().unwrap_err();
        assert!(matches!(err, QueueError::Connect(_)), "{url}: {err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{url}: took {:?}",
            started.elapsed()
        );
        assert!(
            !err.to_string().contains("wrong"),
            "the password leaked: {err}"
        );
    }
}

#[test]
fn an_acl_user_with_only_the_queues_keys_runs_the_queue() {
    // The default user is off: only `app` may log in, and only to `tw:*`
    // keys and channels, without the dangerous commands (CONFIG, INFO).
    let config = Config::new()
        .config("user", "default off")
        .config("user", "app on >app-pass ~tw:* &tw:* +@all -@dangerous")
        .config(
            "user",
            "mute on >mute-pass ~tw:* resetchannels +@all -@dangerous",
        );
    let Some(server) = RedisServer::start_with_or_skip(config) else {
        return;
    };
    let port = server.port();
    let queue =
        Queue::connect(&format!("redis://app:app-pass@127.0.0.1:{port}/"), "orders").unwrap();
    round_trip(&queue);
    // The user may not read the eviction policy: the queue says so.
    assert_eq!(queue.eviction_policy(), None);
    // A user who may not publish the wake-up hints: a schedule fails, and
    // stores nothing (a script's writes before a failing command stay, so
    // the job was stored while the call said it failed, and its retry said
    // `Exists`). The same for a reschedule.
    let mute = quick(Queue::builder(
        &format!("redis://mute:mute-pass@127.0.0.1:{port}/"),
        "muted",
    ))
    .connect()
    .unwrap();
    for _ in 0..2 {
        assert!(matches!(
            mute.schedule_in("j", MS, b""),
            Err(QueueError::Server(_))
        ));
        assert_eq!(mute.job("j").unwrap(), None);
    }
    queue
        .schedule_in("later", Duration::from_secs(3600), b"")
        .unwrap();
    let on_orders = quick(Queue::builder(
        &format!("redis://mute:mute-pass@127.0.0.1:{port}/"),
        "orders",
    ))
    .connect()
    .unwrap();
    let due = queue.job("later").unwrap().unwrap().due;
    assert!(on_orders.reschedule_in("later", MS).is_err());
    assert_eq!(queue.job("later").unwrap().unwrap().due, due);
    let err = quick(Queue::builder(
        &format!("redis://app:nope@127.0.0.1:{port}/"),
        "orders",
    ))
    .connect()
    .unwrap_err();
    assert!(matches!(err, QueueError::Connect(_)), "{err:?}");
}

#[test]
fn tls_only_with_a_private_ca_and_client_certificates() {
    if redis_server::skip() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("tickwheel-tls-{}", std::process::id()));
    let certs = tls_certs::make(&dir);
    let config = Config::new().tls_only(&certs.server_cert, &certs.server_key, &certs.ca, true);
    let server = RedisServer::start_with(config);
    let port = server.port();
    let ca = TlsFiles::read(&certs.ca);
    let (cert, key) = (
        TlsFiles::read(&certs.client_cert),
        TlsFiles::read(&certs.client_key),
    );
    for host in ["127.0.0.1", "localhost"] {
        let queue = Queue::builder(&format!("rediss://{host}:{port}/"), host)
            .tls_root_certificate(ca.clone())
            .tls_client_certificate(cert.clone(), key.clone())
            .connect()
            .unwrap();
        round_trip(&queue);
    }
    // Without the CA the server's certificate is not trusted; without a
    // client certificate the server refuses; in plain TCP nothing answers.
    // Certificate failures are final: a clear error at once, not a retry.
    let untrusted = quick(Queue::builder(
        &format!("rediss://127.0.0.1:{port}/"),
        "orders",
    ))
    .tls_client_certificate(cert, key)
    .connect();
    assert!(
        matches!(&untrusted, Err(QueueError::Connect(why)) if why.contains("certificate")),
        "{untrusted:?}"
    );
    let anonymous = quick(Queue::builder(
        &format!("rediss://127.0.0.1:{port}/"),
        "orders",
    ))
    .tls_root_certificate(ca)
    .connect();
    assert!(
        matches!(&anonymous, Err(QueueError::Connect(why)) if why.contains("Certificate")),
        "{anonymous:?}"
    );
    let plain = quick(Queue::builder(
        &format!("redis://127.0.0.1:{port}/"),
        "orders",
    ))
    .connect();
    assert!(plain.is_err());
    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_host_name_and_a_database_number() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let port = server.port();
    let in_db3 = Queue::connect(&format!("redis://localhost:{port}/3"), "orders").unwrap();
    let in_db0 = Queue::connect(&format!("redis://localhost:{port}/0"), "orders").unwrap();
    in_db3
        .schedule_in("only-in-3", Duration::from_secs(60), b"")
        .unwrap();
    assert_eq!(in_db3.len().unwrap(), (1, 0));
    assert_eq!(in_db0.len().unwrap(), (0, 0));
    // The job's keys really are in database 3 (database 0 holds only the
    // partition count its queue stored at connect).
    assert_eq!(
        server.command(&["EXISTS", "tw:{orders}:jobs", "tw:{orders}:due"]),
        ":0\r\n"
    );
    assert_eq!(server.command(&["DBSIZE"]), ":1\r\n");
    round_trip(&in_db0);
}

/// `redis+unix://` reaches a server on its Unix socket, with a database
/// number: every connection the queue and its consumer open is on the
/// socket, and the consumer's wake-up hints ride it too (a job due in
/// 20 ms arrives long before the 1 s poll).
#[test]
fn a_unix_socket_with_a_database_number() {
    // Relative to the server's data directory, where it runs.
    let Some(server) = RedisServer::start_with_or_skip(
        Config::new()
            .config("unixsocket", "redis.sock")
            .config("unixsocketperm", "700"),
    ) else {
        return;
    };
    let socket = server.data_dir().join("redis.sock");
    let queue =
        Queue::connect(&format!("redis+unix://{}?db=2", socket.display()), "orders").unwrap();
    let consumer = queue.consumer().unwrap();
    round_trip(&queue);
    let started = Instant::now();
    queue.schedule_in("hinted", 20 * MS, b"").unwrap();
    let jobs = consumer.fetch(1, Duration::from_secs(5)).unwrap();
    assert_eq!(jobs.len(), 1);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "the wake-up hint did not arrive over the socket: {:?}",
        started.elapsed()
    );
    assert_eq!(consumer.ack(&jobs[0]).unwrap(), Acked::Acked);
    // Every client but this listing's own TCP connection is on the socket.
    let clients = server.command(&["CLIENT", "LIST"]);
    // (Redis flags a Unix socket's clients `U`.)
    let lines: Vec<&str> = clients.lines().filter(|l| l.starts_with("id=")).collect();
    assert!(lines.len() >= 3, "{clients}");
    for line in &lines {
        let flags = line
            .split(' ')
            .find_map(|field| field.strip_prefix("flags="))
            .unwrap_or_default();
        assert!(
            flags.contains('U') || line.contains("cmd=client|list"),
            "a connection not on the socket: {line}"
        );
    }
    // The jobs were in database 2: database 0 holds only the partition
    // count the queue stored at connect.
    assert_eq!(
        server.command(&["EXISTS", "tw:{orders}:jobs", "tw:{orders}:due"]),
        ":0\r\n"
    );
    // A queue of the same name in database 3, behind the same socket, is
    // another queue: a delivery of one cannot ack the other's job, though
    // the two jobs share an id and a fence.
    let in_db3 =
        Queue::connect(&format!("redis+unix://{}?db=3", socket.display()), "orders").unwrap();
    queue.schedule_in("same-id", MS, b"2").unwrap();
    in_db3.schedule_in("same-id", MS, b"3").unwrap();
    let of_db3 = in_db3.consumer().unwrap();
    let job = consumer.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(job.payload, b"2");
    assert!(matches!(of_db3.ack(&job), Err(QueueError::WrongQueue)));
    let theirs = of_db3.fetch(1, Duration::from_secs(5)).unwrap().remove(0);
    assert_eq!(
        (theirs.payload.as_slice(), theirs.fence()),
        (&b"3"[..], job.fence())
    );
    assert_eq!(of_db3.ack(&theirs).unwrap(), Acked::Acked);
    assert_eq!(consumer.ack(&job).unwrap(), Acked::Acked);
}

#[test]
fn a_single_node_cluster() {
    let Some(server) = crate::redis_cluster::single_node() else {
        return;
    };
    let queue = Queue::cluster_builder(&[&server.url()], "orders")
        .connect()
        .unwrap();
    round_trip(&queue);
    // Hints cross the cluster bus: a consumer asleep on nothing wakes for
    // a job scheduled after it went to sleep, long before its poll.
    let consumer = Queue::cluster_builder(&[&server.url()], "orders")
        .poll_interval(Duration::from_secs(30))
        .connect()
        .unwrap()
        .consumer()
        .unwrap();
    assert!(consumer.fetch(1, 200 * MS).unwrap().is_empty());
    let waiter = std::thread::spawn(move || consumer.fetch(1, Duration::from_secs(10)).unwrap());
    std::thread::sleep(100 * MS);
    let scheduled = Instant::now();
    queue.schedule_in("hinted", 50 * MS, b"").unwrap();
    let jobs = waiter.join().unwrap();
    assert_eq!(jobs.len(), 1);
    assert!(
        scheduled.elapsed() < Duration::from_secs(2),
        "took {:?}",
        scheduled.elapsed()
    );
}

#[test]
fn resp3_works_as_resp2_does() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let url = format!("redis://127.0.0.1:{}/?protocol=resp3", server.port());
    let queue = Queue::builder(&url, "orders")
        .poll_interval(100 * MS)
        .hints(false)
        .connect()
        .unwrap();
    round_trip(&queue);
    // Without hints, only the poll (a RESP3 map of scores) finds a job
    // scheduled after the consumer went to sleep.
    let consumer = queue.consumer().unwrap();
    assert!(consumer.fetch(1, 50 * MS).unwrap().is_empty());
    // Due in 500 ms: the fetch's first claim comes well before, even on a
    // loaded machine (at 20 ms a stall let that claim find it, no poll).
    queue.schedule_in("polled", 500 * MS, b"").unwrap();
    let started = Instant::now();
    assert_eq!(consumer.fetch(1, Duration::from_secs(5)).unwrap().len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert!(queue.metrics().polls > 0);
    assert_eq!(queue.eviction_policy(), Some("noeviction"));
}

#[test]
fn a_server_that_may_evict_keys_is_refused_unless_allowed() {
    let Some(server) =
        RedisServer::start_with_or_skip(Config::new().config("maxmemory-policy", "allkeys-lru"))
    else {
        return;
    };
    let err = Queue::connect(&server.url(), "orders").unwrap_err();
    assert!(
        matches!(&err, QueueError::EvictingServer(policy) if policy == "allkeys-lru"),
        "{err:?}"
    );
    let queue = Queue::builder(&server.url(), "orders")
        .allow_eviction(true)
        .connect()
        .unwrap();
    assert_eq!(queue.eviction_policy(), Some("allkeys-lru"));
    round_trip(&queue);
    // volatile-* touches only keys with a time to live: the queue's own
    // keys have none, so it is accepted.
    server.command(&["CONFIG", "SET", "maxmemory-policy", "volatile-lru"]);
    let queue = Queue::connect(&server.url(), "orders").unwrap();
    assert_eq!(queue.eviction_policy(), Some("volatile-lru"));
}

#[test]
fn urls_that_cannot_work_are_clear_errors_before_any_network() {
    for url in [
        "http://127.0.0.1:6379",
        "redis://127.0.0.1:notaport",
        "not a url",
    ] {
        let err = Queue::connect(url, "orders").unwrap_err();
        assert!(matches!(err, QueueError::Connect(_)), "{url}: {err:?}");
    }
    let err = Queue::cluster_builder(&[], "orders").connect().unwrap_err();
    assert!(matches!(err, QueueError::Connect(_)), "{err:?}");
    // A Sentinel target without its master says which part is missing.
    let sentinels = ["redis://127.0.0.1:1"];
    for master in ["", " "] {
        let err = Queue::sentinel_builder(&sentinels, master, "orders")
            .connect()
            .unwrap_err();
        assert!(
            matches!(&err, QueueError::Connect(why) if why.contains("master's URL")),
            "{master:?}: {err:?}"
        );
    }
}
