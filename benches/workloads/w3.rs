//! W3: reset random live timers, a tick every [`OPS_PER_TICK`] resets.

use super::{Outcome, Shape, Shaped, Workload, OPS_PER_TICK, W3_TIMEOUT};
use crate::peers::Peer;

/// W3: `live` timers at `W3_TIMEOUT`, then resets of random ones to
/// `now + W3_TIMEOUT`, a tick every `OPS_PER_TICK` resets.
pub(crate) struct W3ResetHeavy<'a> {
    pub(super) live: usize,
    pub(super) targets: &'a [u32],
}

impl Shaped for W3ResetHeavy<'_> {
    fn shape(&self) -> Shape {
        let (live, resets) = (self.live, self.targets.len());
        Shape::held("w3_reset_heavy", live, resets, "resets", live, 5)
    }
}

impl Workload for W3ResetHeavy<'_> {
    fn setup<P: Peer>(&self, peer: &mut P) -> Vec<P::Key> {
        (0..self.live as u64)
            .map(|value| peer.insert(W3_TIMEOUT, value))
            .collect()
    }

    fn play<P: Peer>(
        &self,
        peer: &mut P,
        keys: &mut Vec<P::Key>,
        op_done: &mut impl FnMut(),
    ) -> Outcome {
        let mut now = 0;
        let mut fired = 0u64;
        for chunk in self.targets.chunks(OPS_PER_TICK) {
            for &target in chunk {
                let reset = peer.reset(keys[target as usize], now + W3_TIMEOUT);
                assert!(reset, "every timer is live");
                op_done();
            }
            now += 1;
            peer.advance(now, |_| fired += 1);
        }
        Outcome {
            fired,
            ..Outcome::default()
        }
    }

    fn check(&self, outcome: &Outcome) {
        assert_eq!(outcome.fired, 0, "nothing comes due");
    }
}
