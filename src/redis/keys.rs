//! A queue's key names (a partition's, see `partitions.rs`), and the
//! request tokens that let a retried call recognise its own first attempt.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::hash::{BuildHasher, Hasher};
use core::sync::atomic::{AtomicU64, Ordering};
use std::collections::hash_map::RandomState;

/// The queue's keys, in the order every script takes them (see
/// `scripts/common.lua`), and its wake-up channel.
#[derive(Debug)]
pub(super) struct Keys {
    pub(super) fixed: [String; 6],
    pub(super) channel: String,
    prefix: String,
}

impl Keys {
    /// The keys under hash tag `{tag}`.
    pub(super) fn new(tag: &str) -> Keys {
        let prefix = format!("tw:{{{tag}}}:");
        let key = |suffix: &str| format!("{prefix}{suffix}");
        Keys {
            fixed: [
                key("due"),
                key("jobs"),
                key("dead"),
                key("ends"),
                key("seq"),
                key("spread"),
            ],
            channel: key("wake"),
            prefix,
        }
    }

    /// These keys with a shard channel for wake-ups (`…:shard-wake`,
    /// which the scripts publish with `SPUBLISH`): on a Redis 7 cluster a
    /// hint then reaches only the partition's shard, where `PUBLISH`
    /// crosses the whole cluster bus.
    pub(super) fn with_shard_channel(mut self) -> Keys {
        self.channel = format!("{}shard-wake", self.prefix);
        self
    }

    pub(super) fn due(&self) -> &str {
        &self.fixed[0]
    }

    pub(super) fn dead(&self) -> &str {
        &self.fixed[2]
    }

    /// A per-call key (a claim's replay record, an answer kept for a
    /// retry), under the queue's hash tag.
    pub(super) fn of_token(&self, kind: &str, token: &Token) -> String {
        format!("{}{kind}:{}", self.prefix, token.hex())
    }

    /// Every key of the queue, for tests and tools that look inside.
    #[allow(dead_code)]
    pub(super) fn all(&self) -> Vec<&str> {
        self.fixed.iter().map(String::as_str).collect()
    }
}

/// A request token: 64 random bits, the same for every attempt of one
/// call, so a script can tell its own earlier effect from anyone else's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Token(u64);

impl Token {
    /// A fresh token: a per-process random base plus a counter, mixed, so
    /// tokens never repeat within a process and collide across processes
    /// with probability about 2^-64 per pair.
    pub(super) fn new() -> Token {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let base = *BASE.get_or_init(|| RandomState::new().build_hasher().finish());
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Token(mix(base ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
    }

    /// 16 lowercase hex digits, for key names.
    pub(super) fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }

    /// 8 bytes, big-endian, as the scripts store it in a record.
    pub(super) fn bytes(&self) -> Vec<u8> {
        self.0.to_be_bytes().to_vec()
    }
}

/// splitmix64's finaliser: a bijection, so distinct inputs stay distinct.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_do_not_repeat_and_are_sixteen_hex_digits() {
        let tokens: std::collections::HashSet<String> =
            (0..10_000).map(|_| Token::new().hex()).collect();
        assert_eq!(tokens.len(), 10_000);
        assert!(tokens
            .iter()
            .all(|t| t.len() == 16 && t.bytes().all(|b| b.is_ascii_hexdigit())));
    }

    #[test]
    fn every_key_shares_the_hash_tag() {
        let keys = Keys::new("orders");
        for key in keys.all() {
            assert!(key.starts_with("tw:{orders}:"), "{key}");
        }
        assert_eq!(
            keys.of_token("claim", &Token(255)),
            "tw:{orders}:claim:00000000000000ff"
        );
    }
}
