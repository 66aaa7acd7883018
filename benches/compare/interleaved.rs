//! The interleaved rounds after criterion: the peers take turns, one
//! iteration each, so a burst of noise on the shared machine lands on
//! all of them alike, and the per-round ratios are the robust comparison.

use core::time::Duration;

use tickwheel::Wheel;

use crate::peers::binary_heap::HeapTimers;
use crate::peers::bitwheel::BitWheelPeer;
use crate::peers::lean_heap::LeanHeap;
use crate::peers::nexus_timer::NexusPeer;
use crate::workloads::server::LoopWorkload;
use crate::workloads::{Shape, Workload, HEAP, LEAN, TURN_ORDERS, WHEEL};

/// Rounds of the interleaved comparison of tickwheel and the two heaps: a
/// multiple of 6, so each of the [`TURN_ORDERS`] comes up equally often.
pub(crate) const INTERLEAVED_ROUNDS: usize = 12;

/// One workload's interleaved rounds: each heap's time ÷ tickwheel's time
/// per round, as two lines (`binary_heap`, then `lean_heap`).
pub(crate) fn interleave<W: Workload>(workload: &W, rounds: usize) -> [String; 2] {
    let Shape {
        group, elements, ..
    } = workload.shape();
    let mut ns: [Vec<f64>; 3] = core::array::from_fn(|_| Vec::with_capacity(rounds));
    let per_op = |time: Duration| time.as_nanos() as f64 / elements as f64;
    for round in 0..rounds {
        for peer in TURN_ORDERS[round % TURN_ORDERS.len()] {
            let time = match peer {
                WHEEL => workload.run(1, &mut Wheel::<u64>::with_capacity).0,
                HEAP => workload.run(1, &mut HeapTimers::<u64>::with_capacity).0,
                _ => workload.run(1, &mut LeanHeap::with_capacity).0,
            };
            ns[peer].push(per_op(time));
        }
    }
    [
        ratio_line(&group, "binary_heap", "heap", &ns[WHEEL], &ns[HEAP]),
        ratio_line(&group, "lean_heap", "lean_heap", &ns[WHEEL], &ns[LEAN]),
    ]
}

/// One line of interleaved results: `peer`'s time ÷ tickwheel's time per
/// round (`ratio` names it), with the median, the minimum and tickwheel's
/// wins.
fn ratio_line(group: &str, peer: &str, ratio: &str, wheel_ns: &[f64], peer_ns: &[f64]) -> String {
    let rounds = wheel_ns.len();
    let ratios: Vec<f64> = peer_ns.iter().zip(wheel_ns).map(|(p, w)| p / w).collect();
    let wins = ratios.iter().filter(|&&ratio| ratio > 1.0).count();
    let in_order = ratios
        .iter()
        .map(|ratio| format!("{ratio:.2}"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{group}: tickwheel median {:.1} ns, {peer} median {:.1} ns; {ratio}/tickwheel per round: {in_order} (median {:.2}, min {:.2}; tickwheel faster in {wins} of {rounds})",
        median(wheel_ns),
        median(peer_ns),
        median(&ratios),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
    )
}

/// The peers of the server-loop rounds, in the order of their columns.
pub(crate) const LOOP_PEERS: [&str; 4] = ["tickwheel", "lean_heap", "nexus_timer", "bitwheel"];

/// One server-loop workload's interleaved rounds: tickwheel, the lean heap,
/// nexus-timer and bitwheel take turns, one iteration each, the first mover
/// rotating round by round. One line per peer but tickwheel: its time ÷ the
/// lean heap's per round (< 1: faster than the lean heap), and tickwheel's
/// line the same way, so every peer's ratio to the lean heap is there.
pub(crate) fn interleave_loop<W: LoopWorkload>(workload: &W, rounds: usize) -> Vec<String> {
    let Shape {
        group, elements, ..
    } = workload.shape();
    let mut ns: [Vec<f64>; 4] = core::array::from_fn(|_| Vec::with_capacity(rounds));
    let per_op = |time: Duration| time.as_nanos() as f64 / elements as f64;
    for round in 0..rounds {
        for turn in 0..LOOP_PEERS.len() {
            let peer = (round + turn) % LOOP_PEERS.len();
            let time = match peer {
                0 => workload.run(1, &mut Wheel::<u64>::with_capacity).0,
                1 => workload.run(1, &mut LeanHeap::with_capacity).0,
                2 => workload.run(1, &mut NexusPeer::with_capacity).0,
                _ => workload.run(1, &mut |_| BitWheelPeer::new()).0,
            };
            ns[peer].push(per_op(time));
        }
    }
    LOOP_PEERS
        .iter()
        .enumerate()
        .filter(|&(peer, _)| peer != 1)
        .map(|(peer, name)| {
            let ratios: Vec<f64> = ns[peer].iter().zip(&ns[1]).map(|(p, l)| p / l).collect();
            let in_order = ratios
                .iter()
                .map(|ratio| format!("{ratio:.2}"))
                .collect::<Vec<_>>()
                .join(" ");
            let faster = ratios.iter().filter(|&&ratio| ratio < 1.0).count();
            format!(
                "{group}: {name} median {:.1} ns, lean_heap median {:.1} ns; {name}/lean_heap per round: {in_order} (median {:.2}; faster than lean_heap in {faster} of {rounds})",
                median(&ns[peer]),
                median(&ns[1]),
                median(&ratios),
            )
        })
        .collect()
}

/// The median of `values` (the upper one of an even count).
fn median(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
