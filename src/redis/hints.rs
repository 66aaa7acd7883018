//! The hint thread: a consumer's subscription to its queue's wake-up
//! channel, on a connection of its own.

use core::sync::atomic::{AtomicBool, Ordering};
use core::time::Duration;

use crossbeam_channel::Sender;

use super::client::{bump, jitter, Client, Shared};
use super::resp::{Connection, RespError, Value};

/// Why a sleeping consumer wakes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Wake {
    /// Something is due (the timer fired, or a claim filled its batch).
    Due,
    /// A producer scheduled a job due at this time (server microseconds).
    Hint(i64),
}

/// The hint thread: subscribes to the queue's wake channel and forwards
/// each due time; re-subscribes with backoff when the connection drops,
/// and then wakes the consumer, since hints may have been missed.
pub(super) fn listen(shared: &Shared, tx: &Sender<Wake>, stop: &AtomicBool) {
    let mut backoff = Duration::from_millis(10);
    while !stop.load(Ordering::Acquire) {
        let subscribed = subscribe(&shared.client, &shared.keys.channel);
        let Ok(mut conn) = subscribed else {
            bump(&shared.client.counters.failures, 1);
            std::thread::sleep(jitter(backoff));
            backoff = (backoff * 2).min(Duration::from_secs(1));
            continue;
        };
        backoff = Duration::from_millis(10);
        let _ = tx.send(Wake::Due);
        while !stop.load(Ordering::Acquire) {
            match conn.recv_timeout(Duration::from_millis(100)) {
                Ok(None) => {}
                Ok(Some(message)) => {
                    if let Some(at) = hint_of(message) {
                        let _ = tx.send(Wake::Hint(at));
                    }
                }
                Err(_) => break,
            }
        }
    }
}

fn subscribe(client: &Client, channel: &[u8]) -> Result<Connection, RespError> {
    let mut conn = client.dial()?;
    conn.send(&[b"SUBSCRIBE", channel])?;
    conn.recv()?; // the subscription's confirmation
    Ok(conn)
}

/// A pub/sub `message` reply's payload: a due time in microseconds.
fn hint_of(message: Value) -> Option<i64> {
    let parts = message.into_array()?;
    let [kind, _, payload] = parts.as_slice() else {
        return None;
    };
    if kind.as_bulk()? != b"message" {
        return None;
    }
    core::str::from_utf8(payload.as_bulk()?).ok()?.parse().ok()
}
