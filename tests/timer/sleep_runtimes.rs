//! The async sleeps under real runtimes, on real sockets over loopback:
//! tokio and smol each run a server whose connection has an idle timeout,
//! `Timer::timeout` around each read. A client that keeps talking is
//! served; one that goes quiet is cut off after the timeout, not before.

use core::time::Duration;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use tickwheel::timer::Elapsed;
use tickwheel::Timer;

/// Fifty times the client's gap: a loaded machine that stalls the client
/// for a few hundred ms does not make it look idle.
const IDLE: Duration = Duration::from_millis(1_000);

/// A client on a std thread: sends `packets` packets 20 ms apart, then
/// stays connected and quiet until the server closes the connection.
fn client(address: core::net::SocketAddr, packets: usize) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut socket = TcpStream::connect(address).unwrap();
        for _ in 0..packets {
            socket.write_all(b"ping").unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut rest = Vec::new();
        let _ = socket.read_to_end(&mut rest); // until the server closes
    })
}

/// Reads `socket` with `Timer::timeout` around each read until the client
/// goes quiet, then checks that every packet was read and that the cut
/// came no sooner than `IDLE` after the last read. A macro because
/// each runtime's `read` comes from its own extension trait.
macro_rules! serve_until_idle {
    ($timer:expr, $socket:expr) => {{
        let mut last_read = Instant::now();
        let mut buffer = [0; 64];
        let mut received = 0;
        let outcome = loop {
            match $timer.timeout(IDLE, $socket.read(&mut buffer)).await {
                Ok(Ok(0)) => break "closed",
                Ok(Ok(n)) => {
                    received += n;
                    last_read = Instant::now();
                }
                Ok(Err(error)) => panic!("{error}"),
                Err(Elapsed) => break "idle",
            }
        };
        assert_eq!(outcome, "idle");
        assert_eq!(received, 4 * 4, "every packet read before the timeout");
        // Timed from the last read, not from the accept: on a loaded
        // machine the accept may return after the first packets came.
        assert!(last_read.elapsed() >= IDLE, "cut before the idle timeout");
    }};
}

#[test]
fn an_idle_connection_times_out_under_tokio() {
    use tokio::io::AsyncReadExt;
    let timer = Timer::new().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let talker = client(listener.local_addr().unwrap(), 4);
        let (mut socket, _) = listener.accept().await.unwrap();
        serve_until_idle!(timer, socket);
        drop(socket);
        talker.join().unwrap();
    });
}

#[test]
fn an_idle_connection_times_out_under_smol() {
    use smol::io::AsyncReadExt;
    let timer = Timer::new().unwrap();
    smol::block_on(async {
        let listener = smol::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let talker = client(listener.local_addr().unwrap(), 4);
        let (mut socket, _) = listener.accept().await.unwrap();
        serve_until_idle!(timer, socket);
        drop(socket);
        talker.join().unwrap();
    });
}

/// Many sleeps at once under smol's executor, on the real clock: each
/// completes once, not before its deadline.
#[test]
fn ten_thousand_sleeps_under_smol() {
    let timer = Timer::new().unwrap();
    let executor = smol::LocalExecutor::new();
    let started = Instant::now();
    let tasks: Vec<_> = (0..10_000u32)
        .map(|i| {
            let sleep = timer.sleep(Duration::from_micros(u64::from(i % 50) * 1_000));
            let deadline = sleep.deadline();
            executor.spawn(async move {
                sleep.await;
                assert!(Instant::now() >= deadline, "woken early");
            })
        })
        .collect();
    smol::block_on(executor.run(async {
        for task in tasks {
            task.await;
        }
    }));
    assert!(started.elapsed() >= Duration::from_millis(49));
}
