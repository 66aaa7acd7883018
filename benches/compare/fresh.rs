//! `w1_insert_held` in fresh child processes (`--fresh-insert PEER`),
//! where reserved memory has never been touched: what a first insert
//! costs, with the page faults it took.

use tickwheel::Wheel;

use crate::interleaved::LOOP_PEERS;
use crate::peers::bitwheel::BitWheelPeer;
use crate::peers::lean_heap::LeanHeap;
use crate::peers::nexus_timer::NexusPeer;
use crate::workloads::server::LoopWorkload;
use crate::workloads::{Inputs, Shaped, Sizes};

/// Rounds of `w1_insert_held` in fresh processes, each peer once a round.
pub(crate) const FRESH_ROUNDS: usize = 6;

/// `--fresh-insert PEER`: one iteration of `w1_insert_held` for `PEER` in
/// this (fresh) process, printed as `fresh PEER NS FAULTS`: ns per insert
/// and minor page faults during the inserts. Memory a process has never
/// used must be faulted in; in the criterion loop the allocator hands back
/// memory an earlier iteration touched, so only a fresh process shows what
/// a first insert into reserved room costs.
pub(crate) fn fresh_insert(peer: &str, sizes: &Sizes) {
    let inputs = Inputs::new(sizes);
    let workload = inputs.w1_insert_held();
    let (time, tally) = match peer {
        "tickwheel" => workload.run(1, &mut Wheel::<u64>::with_capacity),
        "lean_heap" => workload.run(1, &mut LeanHeap::with_capacity),
        "nexus_timer" => workload.run(1, &mut NexusPeer::with_capacity),
        "bitwheel" => workload.run(1, &mut |_| BitWheelPeer::new()),
        _ => panic!("--fresh-insert: unknown peer {peer}"),
    };
    let ns = time.as_nanos() as f64 / workload.shape().elements as f64;
    println!("fresh {peer} {ns:.2} {}", tally.faults);
}

/// Runs [`fresh_insert`] in child processes, [`FRESH_ROUNDS`] rounds of
/// every peer of [`LOOP_PEERS`], the first mover rotating; one line per
/// peer with the median ns per insert and page faults per round.
pub(crate) fn fresh_rounds(full: bool) -> Vec<String> {
    let Ok(exe) = std::env::current_exe() else {
        return Vec::new();
    };
    let mut seen: [Vec<(f64, u64)>; 4] = Default::default();
    for round in 0..FRESH_ROUNDS {
        for turn in 0..LOOP_PEERS.len() {
            let peer = (round + turn) % LOOP_PEERS.len();
            let mut command = std::process::Command::new(&exe);
            command.args(["--fresh-insert", LOOP_PEERS[peer]]);
            if full {
                command.arg("--bench");
            }
            let Ok(output) = command.output() else {
                return Vec::new();
            };
            let line = String::from_utf8_lossy(&output.stdout);
            let fields: Vec<&str> = line
                .lines()
                .find_map(|line| line.strip_prefix("fresh "))
                .map(|rest| rest.split_whitespace().collect())
                .unwrap_or_default();
            if let [_, ns, faults] = fields[..] {
                seen[peer].push((ns.parse().unwrap_or(f64::NAN), faults.parse().unwrap_or(0)));
            }
        }
    }
    LOOP_PEERS
        .iter()
        .zip(&seen)
        .map(|(name, rounds)| {
            let mut ns: Vec<f64> = rounds.iter().map(|&(ns, _)| ns).collect();
            ns.sort_by(f64::total_cmp);
            let median = ns.get(ns.len() / 2).copied().unwrap_or(f64::NAN);
            let per_round = rounds
                .iter()
                .map(|(ns, faults)| format!("{ns:.1} ns/{faults}"))
                .collect::<Vec<_>>()
                .join(", ");
            format!("w1_insert_held, fresh process: {name} median {median:.1} ns per insert; per round (ns per insert/page faults): {per_round}")
        })
        .collect()
}
