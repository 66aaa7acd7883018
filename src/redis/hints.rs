//! The queue's hint subscription: one pub/sub connection per process
//! (on a Redis 7 cluster, one sharded subscription: a link per master),
//! started by its first consumer, subscribed to every partition's channel,
//! that forwards every due time a producer publishes to every claim loop,
//! and tells them to resync after each (re)subscription, since hints may
//! have been missed meanwhile.
//!
//! A sharded subscription is rebuilt from scratch, topology included,
//! whenever a node drops it: a lost link, or `sunsubscribe` when a slot
//! migrates away from the node.

use alloc::string::String;
use alloc::sync::Arc;
use core::time::Duration;

use redis::{PushKind, Value};

use super::counters::bump;
use super::link::{jitter, Ctx, Hint, Io};

/// Keeps the queue's hint subscription: forwards every published due time
/// to the consumers, and tells them to resync after each (re)subscription.
pub(super) async fn hints(io: Io) {
    let ctx = Arc::clone(&io.ctx);
    let mut backoff = Duration::from_millis(10);
    let mut attempt = 0usize;
    loop {
        let channels: alloc::vec::Vec<&str> = ctx
            .parts()
            .iter()
            .map(|keys| keys.channel.as_str())
            .collect();
        let served = if ctx.parts().sharded {
            sharded(&ctx, &channels).await
        } else {
            plain(&ctx, &channels, attempt).await
        };
        attempt = attempt.wrapping_add(1);
        if served {
            backoff = Duration::from_millis(10);
        } else {
            bump(&ctx.counters.failures, 1);
            tokio::time::sleep(jitter(backoff)).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }
}

/// One plain subscription, served until it drops; `false` if it could not
/// be made.
async fn plain(ctx: &Ctx, channels: &[&str], attempt: usize) -> bool {
    let Ok(mut pubsub) = ctx.reach.subscribe(channels, attempt).await else {
        return false;
    };
    subscribed(ctx);
    let mut messages = pubsub.on_message();
    while let Some(message) = futures_next(&mut messages).await {
        forward(ctx, message.get_channel_name(), message.get_payload_bytes());
    }
    true
}

/// How long a sharded subscription that misses some channels (a shard
/// down) is served before it is made again.
const PARTIAL_RETRY: Duration = Duration::from_secs(5);

/// One sharded subscription, served until a node drops it; `false` if it
/// could not be made.
async fn sharded(ctx: &Ctx, channels: &[&str]) -> bool {
    let Some(Ok((conn, mut pushes, partial))) = ctx.reach.subscribe_sharded(channels).await else {
        return false;
    };
    subscribed(ctx);
    // Some shard did not answer: its channels are tried again, from
    // scratch, after a while; the others' hints come meanwhile.
    let again = partial.then(|| tokio::time::Instant::now() + PARTIAL_RETRY);
    loop {
        let push = match again {
            Some(at) => tokio::time::timeout_at(at, pushes.recv())
                .await
                .ok()
                .flatten(),
            None => pushes.recv().await,
        };
        let Some(push) = push else { break };
        match (push.kind, push.data.as_slice()) {
            (PushKind::SMessage, [Value::BulkString(channel), Value::BulkString(at), ..]) => {
                forward(ctx, &String::from_utf8_lossy(channel), at);
            }
            (PushKind::SUnsubscribe | PushKind::Disconnection, _) => break,
            _ => {}
        }
    }
    drop(conn);
    true
}

/// A (re)subscription: counted, and the consumers resync, since hints may
/// have been missed while there was none.
fn subscribed(ctx: &Ctx) {
    bump(&ctx.counters.dials, 1);
    let _ = ctx.hints.send(Hint::Resync);
}

/// A published due time on `channel`, to the claim loops.
fn forward(ctx: &Ctx, channel: &str, payload: &[u8]) {
    let at = core::str::from_utf8(payload)
        .ok()
        .and_then(|s| s.parse::<i64>().ok());
    let part = ctx.parts().of_channel(channel);
    if let (Some(at), Some(part)) = (at, part) {
        let _ = ctx.hints.send(Hint::At { part, at });
    }
}

/// The next item of a stream, without a futures dependency.
async fn futures_next<S: futures_core::Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    core::future::poll_fn(|cx| core::pin::Pin::new(&mut *stream).poll_next(cx)).await
}
