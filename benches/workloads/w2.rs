//! W2: insert `n` timers, then cancel every one in a shuffled order.

use super::{Outcome, Shape, Shaped, Workload};
use crate::peers::Peer;

/// W2: `n` inserts, then `n` cancels in a shuffled order, timed together.
pub(crate) struct W2CancelAll<'a> {
    pub(super) delays: &'a [u64],
    pub(super) order: &'a [u32],
}

impl Shaped for W2CancelAll<'_> {
    fn shape(&self) -> Shape {
        Shape::timers("w2_cancel_all", self.order.len(), 4)
    }
}

impl Workload for W2CancelAll<'_> {
    fn setup<P: Peer>(&self, _: &mut P) -> Vec<P::Key> {
        Vec::with_capacity(self.order.len())
    }

    /// One operation is an insert and, later, the cancel of the same timer:
    /// `op_done` is called once per cancel.
    fn play<P: Peer>(
        &self,
        peer: &mut P,
        keys: &mut Vec<P::Key>,
        op_done: &mut impl FnMut(),
    ) -> Outcome {
        let n = self.order.len();
        let mut value_sum = 0u64;
        for (value, &delay) in self.delays[..n].iter().enumerate() {
            keys.push(peer.insert(delay, value as u64));
        }
        for &index in self.order {
            let value = peer.cancel(keys[index as usize]);
            assert_eq!(value, Some(u64::from(index)), "a pending timer cancels");
            value_sum = value_sum.wrapping_add(u64::from(index));
            op_done();
        }
        Outcome {
            fired: 0,
            cancelled: n as u64,
            value_sum,
        }
    }
}
