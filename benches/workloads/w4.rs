//! W4: churn over a large live set, a tick every [`OPS_PER_TICK`] steps.

use super::{Outcome, Shape, Shaped, Workload, OPS_PER_TICK};
use crate::peers::Peer;

/// W4: `live` pre-filled timers; each step inserts one and cancels a random
/// key from the list of keys, a tick every `OPS_PER_TICK` steps.
pub(crate) struct W4Churn<'a> {
    pub(super) prefill: &'a [u64],
    pub(super) step_delays: &'a [u64],
    pub(super) victims: &'a [u32],
}

impl Shaped for W4Churn<'_> {
    fn shape(&self) -> Shape {
        let (live, steps) = (self.prefill.len(), self.victims.len());
        Shape::held("w4_churn", live, steps, "steps", live + 1, 4)
    }
}

impl Workload for W4Churn<'_> {
    fn setup<P: Peer>(&self, peer: &mut P) -> Vec<P::Key> {
        let mut keys = Vec::with_capacity(self.prefill.len() + 1);
        for (value, &delay) in self.prefill.iter().enumerate() {
            keys.push(peer.insert(delay, value as u64));
        }
        keys
    }

    fn play<P: Peer>(
        &self,
        peer: &mut P,
        keys: &mut Vec<P::Key>,
        op_done: &mut impl FnMut(),
    ) -> Outcome {
        let mut seen = Outcome::default();
        let mut value = self.prefill.len() as u64;
        let mut now = 0;
        let steps = self.step_delays.iter().zip(self.victims);
        let mut steps = steps.peekable();
        while steps.peek().is_some() {
            for (&delay, &victim) in steps.by_ref().take(OPS_PER_TICK) {
                let key = peer.insert(now + delay, value);
                value += 1;
                let old = keys.swap_remove(victim as usize);
                if let Some(cancelled) = peer.cancel(old) {
                    seen.cancelled += 1;
                    seen.value_sum = seen.value_sum.wrapping_add(cancelled);
                }
                keys.push(key);
                op_done();
            }
            now += 1;
            peer.advance(now, |fired| {
                seen.fired += 1;
                seen.value_sum = seen.value_sum.wrapping_add(fired);
            });
        }
        seen
    }
}
