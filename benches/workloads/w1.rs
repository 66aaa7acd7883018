//! W1: insert `n` timers, and expire them tick by tick.

use core::hint::black_box;

use super::{Outcome, Shape, Shaped, Workload};
use crate::peers::{Peer, MAX_DELAY};

/// W1, insert half: `n` inserts into an empty structure.
pub(crate) struct W1Insert<'a> {
    pub(super) delays: &'a [u64],
}

impl Shaped for W1Insert<'_> {
    fn shape(&self) -> Shape {
        Shape::timers("w1_insert", self.delays.len(), 3)
    }
}

impl Workload for W1Insert<'_> {
    fn setup<P: Peer>(&self, _: &mut P) -> Vec<P::Key> {
        Vec::new()
    }

    fn play<P: Peer>(
        &self,
        peer: &mut P,
        _: &mut Vec<P::Key>,
        op_done: &mut impl FnMut(),
    ) -> Outcome {
        for (value, &delay) in self.delays.iter().enumerate() {
            black_box(peer.insert(delay, value as u64));
            op_done();
        }
        Outcome::default()
    }
}

/// W1, expire half: advance tick by tick over `n` pre-filled timers until
/// every one has fired.
pub(crate) struct W1Expire<'a> {
    pub(super) delays: &'a [u64],
}

impl Shaped for W1Expire<'_> {
    fn shape(&self) -> Shape {
        Shape::timers("w1_expire", self.delays.len(), 5)
    }
}

impl Workload for W1Expire<'_> {
    fn setup<P: Peer>(&self, peer: &mut P) -> Vec<P::Key> {
        for (value, &delay) in self.delays.iter().enumerate() {
            peer.insert(delay, value as u64);
        }
        Vec::new()
    }

    fn play<P: Peer>(
        &self,
        peer: &mut P,
        _: &mut Vec<P::Key>,
        op_done: &mut impl FnMut(),
    ) -> Outcome {
        let n = self.delays.len() as u64;
        let (mut fired, mut value_sum) = (0, 0u64);
        let mut now = 0;
        // A little slack past the longest delay, so that a peer that fired
        // late would still be counted (and show up as slower).
        while fired < n && now < MAX_DELAY + 64 {
            now += 1;
            peer.advance(now, |value| {
                fired += 1;
                value_sum = value_sum.wrapping_add(value);
                op_done();
            });
        }
        Outcome {
            fired,
            cancelled: 0,
            value_sum,
        }
    }

    fn check(&self, outcome: &Outcome) {
        let n = self.delays.len() as u64;
        assert_eq!(outcome.fired, n, "every timer fires");
        assert_eq!(outcome.value_sum, n * (n - 1) / 2, "every value fires once");
    }
}
