//! `tickwheel-admin watch --count N` against a real `redis-server`: it
//! never shows more refreshes than asked for.

use crate::admin_tool::{queue_args, run, strs};
use crate::queues::builder;
use crate::redis_server::RedisServer;

/// `watch --count`: "Show this many refreshes and exit." `--count 0`
/// showed one refresh (the count was checked only after the first), so a
/// script asking for none got a frame, and a live view's first screen.
/// Zero refreshes is either refused as a usage error (exit 2) or shows
/// nothing.
#[test]
fn watch_with_a_count_of_zero_shows_no_refresh() {
    let Some(server) = RedisServer::start_or_skip() else {
        return;
    };
    let queue = builder(&server).connect().unwrap();
    queue
        .schedule_in("w", core::time::Duration::ZERO, b"x")
        .unwrap();
    let target = queue_args(&server);
    let watched = run(
        &strs(&target),
        &["watch", "--every", "100ms", "--count", "0"],
    );
    assert!(
        watched.of("watch").is_empty(),
        "exit {}: {:?} {}",
        watched.code,
        watched.lines,
        watched.stderr
    );
    assert!(matches!(watched.code, 0 | 2), "{}", watched.stderr);
}
