//! Wall time and a timer's `Instant`s, one from the other.

use core::time::Duration;
use std::time::{Instant, SystemTime};

/// Converts between a timer's `Instant`s and wall time, from one reading of
/// both.
#[derive(Debug, Clone, Copy)]
pub(super) struct Epoch {
    pub(super) instant: Instant,
    pub(super) wall: SystemTime,
}

impl Epoch {
    pub(super) fn wall_of(self, instant: Instant) -> SystemTime {
        match instant.checked_duration_since(self.instant) {
            Some(ahead) => self.wall.checked_add(ahead).unwrap_or(self.wall),
            None => {
                let behind = self.instant.duration_since(instant);
                self.wall
                    .checked_sub(behind)
                    .unwrap_or(SystemTime::UNIX_EPOCH)
            }
        }
    }

    pub(super) fn instant_of(self, wall: SystemTime) -> Instant {
        match wall.duration_since(self.wall) {
            Ok(ahead) => self
                .instant
                .checked_add(ahead)
                .unwrap_or_else(|| far_future(self.instant)),
            Err(behind) => self
                .instant
                .checked_sub(behind.duration())
                .unwrap_or(self.instant),
        }
    }
}

/// The latest `Instant` after `from` that the platform represents, roughly.
fn far_future(from: Instant) -> Instant {
    let mut step = Duration::from_secs(u64::MAX / 4);
    loop {
        if let Some(far) = from.checked_add(step) {
            return far;
        }
        step /= 2;
    }
}
