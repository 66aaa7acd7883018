//! The crate under test: a thin, inlined [`Peer`] impl over `Wheel<u64>`.

use ::tickwheel::{TimerKey, Wheel};

use super::Peer;

impl Peer for Wheel<u64> {
    type Key = TimerKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> TimerKey {
        Wheel::insert(self, deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: TimerKey) -> Option<u64> {
        Wheel::cancel(self, key)
    }

    #[inline]
    fn reset(&mut self, key: TimerKey, deadline: u64) -> bool {
        Wheel::reset(self, key, deadline)
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fired: impl FnMut(u64)) {
        for expired in Wheel::advance(self, now) {
            fired(expired.value);
        }
    }
}
