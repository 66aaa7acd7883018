//! W2: insert `n` timers, then cancel every one in a shuffled order.

use core::time::Duration;

use super::{label, Outcome, Workload};
use crate::peers::Peer;

/// W2: `n` inserts, then `n` cancels in a shuffled order, timed together.
pub(crate) struct W2CancelAll<'a> {
    pub(super) delays: &'a [u64],
    pub(super) order: &'a [u32],
}

impl Workload for W2CancelAll<'_> {
    fn group(&self) -> String {
        format!("w2_cancel_all/{}", label(self.order.len()))
    }

    fn elements(&self) -> u64 {
        self.order.len() as u64
    }

    fn capacity(&self) -> usize {
        self.order.len()
    }

    fn measurement_time(&self) -> Duration {
        Duration::from_secs(4)
    }

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
