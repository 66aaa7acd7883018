//! The queue's hint subscription: one pub/sub connection per process,
//! started by its first consumer, subscribed to every partition's channel,
//! that forwards every due time a producer publishes to every claim loop, and tells them to resync after each
//! (re)subscription, since hints may have been missed meanwhile.

use alloc::sync::Arc;
use core::time::Duration;

use super::counters::bump;
use super::link::{jitter, Hint, Io};

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
        let subscribed = ctx.reach.subscribe(&channels, attempt).await;
        attempt = attempt.wrapping_add(1);
        let Ok(mut pubsub) = subscribed else {
            bump(&ctx.counters.failures, 1);
            tokio::time::sleep(jitter(backoff)).await;
            backoff = (backoff * 2).min(Duration::from_secs(1));
            continue;
        };
        bump(&ctx.counters.dials, 1);
        backoff = Duration::from_millis(10);
        let _ = ctx.hints.send(Hint::Resync);
        let mut messages = pubsub.on_message();
        while let Some(message) = futures_next(&mut messages).await {
            let at = core::str::from_utf8(message.get_payload_bytes())
                .ok()
                .and_then(|s| s.parse::<i64>().ok());
            let part = ctx.parts().of_channel(message.get_channel_name());
            if let (Some(at), Some(part)) = (at, part) {
                let _ = ctx.hints.send(Hint::At { part, at });
            }
        }
    }
}

/// The next item of a stream, without a futures dependency.
async fn futures_next<S: futures_core::Stream + Unpin>(stream: &mut S) -> Option<S::Item> {
    core::future::poll_fn(|cx| core::pin::Pin::new(&mut *stream).poll_next(cx)).await
}
