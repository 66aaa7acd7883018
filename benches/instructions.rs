//! One workload on one peer, once: the program `benches/callgrind.sh` runs
//! under `valgrind --tool=callgrind` to count instructions per operation.
//!
//! ```text
//! instructions --workload w1_insert|w1_expire|w2|w3|w4
//!              --peer tickwheel|binary_heap|lean_heap
//!              [--quick] [--setup-only]
//! instructions --machine
//! ```
//!
//! With `--workload` and `--peer` it generates the inputs (`--quick`: the
//! quick sizes, every size ÷ 100; otherwise the full sizes of `compare.rs`),
//! creates the structure with the workload's capacity hint, runs the
//! untimed setup (pre-filling), then the measured part once, and prints
//! `operations: N` (the workload's elements). With `--setup-only` it does
//! all of that except the measured part, and prints the same line. Neither
//! frees the structure (it is leaked), so the difference of the two runs'
//! instruction counts is the measured part alone: `callgrind.sh` divides it
//! by `N`. No client requests are needed.
//!
//! `--machine` prints the machine line of `compare.rs` and exits.
//!
//! Anything else (no `--workload`, as under `cargo test --benches` or
//! `cargo bench`) runs every workload on every peer once at the quick
//! sizes and checks that the peers agree on each outcome: a smoke test.

extern crate alloc;

#[allow(
    dead_code,
    reason = "this binary runs tickwheel and the two heaps only"
)]
mod peers;
#[allow(
    dead_code,
    reason = "this binary times nothing; the module also serves compare.rs and tail.rs"
)]
mod workloads;

use core::hint::black_box;

use tickwheel::Wheel;

use peers::binary_heap::HeapTimers;
use peers::lean_heap::LeanHeap;
use peers::Peer;
use workloads::machine::machine_line;
use workloads::{Inputs, Outcome, Sizes, Workload};

const WORKLOADS: [&str; 5] = ["w1_insert", "w1_expire", "w2", "w3", "w4"];
const PEERS: [&str; 3] = ["tickwheel", "binary_heap", "lean_heap"];

/// Builds a structure from `make` with the workload's capacity hint, runs
/// the setup and, unless `setup_only`, the measured part and the check.
/// The structure and its keys are leaked, never freed, so that both kinds
/// of run end the same way.
fn once<W: Workload, P: Peer>(
    workload: &W,
    make: impl FnOnce(usize) -> P,
    setup_only: bool,
) -> Option<Outcome> {
    let mut peer = make(workload.shape().capacity);
    let mut keys = workload.setup(&mut peer);
    let outcome = (!setup_only).then(|| {
        let outcome = workload.play(&mut peer, &mut keys, &mut || {});
        workload.check(&outcome);
        outcome
    });
    core::mem::forget(black_box((peer, keys)));
    outcome
}

fn on_peer<W: Workload>(
    workload: &W,
    peer: &str,
    setup_only: bool,
) -> Result<(u64, Option<Outcome>), String> {
    let outcome = match peer {
        "tickwheel" => once(workload, Wheel::<u64>::with_capacity, setup_only),
        "binary_heap" => once(workload, HeapTimers::<u64>::with_capacity, setup_only),
        "lean_heap" => once(workload, LeanHeap::with_capacity, setup_only),
        other => return Err(format!("unknown peer {other:?}; one of {PEERS:?}")),
    };
    Ok((workload.shape().elements, outcome))
}

/// Runs `workload` on `peer`: the number of operations, and the outcome
/// unless `setup_only`.
fn run(
    inputs: &Inputs,
    workload: &str,
    peer: &str,
    setup_only: bool,
) -> Result<(u64, Option<Outcome>), String> {
    match workload {
        "w1_insert" => on_peer(&inputs.w1_insert(), peer, setup_only),
        "w1_expire" => on_peer(&inputs.w1_expire(), peer, setup_only),
        "w2" => on_peer(&inputs.w2(), peer, setup_only),
        "w3" => on_peer(&inputs.w3(), peer, setup_only),
        "w4" => on_peer(&inputs.w4(), peer, setup_only),
        other => Err(format!("unknown workload {other:?}; one of {WORKLOADS:?}")),
    }
}

/// Every workload on every peer at the quick sizes; `false` if the peers
/// disagree somewhere.
fn smoke() -> bool {
    println!("(no --workload: every workload on every peer once, at 1/100 of the sizes)");
    println!("for instructions per operation run `bash benches/callgrind.sh`");
    let inputs = Inputs::new(&Sizes::QUICK);
    let mut agree = true;
    for workload in WORKLOADS {
        let mut seen = Vec::new();
        for peer in PEERS {
            let (ops, outcome) = run(&inputs, workload, peer, false).expect("a known pair");
            seen.push(outcome);
            println!("  {workload:<9} {peer:<11} {ops:>6} operations, {outcome:?}");
        }
        agree &= seen.windows(2).all(|w| w[0] == w[1]);
    }
    agree
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut workload, mut peer) = (None, None);
    let (mut quick, mut setup_only) = (false, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--workload" => workload = args.next(),
            "--peer" => peer = args.next(),
            "--quick" => quick = true,
            "--setup-only" => setup_only = true,
            "--machine" => {
                println!("{}", machine_line());
                return;
            }
            // `--bench` from cargo, or a filter meant for another bench.
            _ => {}
        }
    }
    let (workload, peer) = match (workload, peer) {
        (Some(workload), Some(peer)) => (workload, peer),
        (None, None) => {
            if !smoke() {
                eprintln!("peers disagree on an outcome");
                std::process::exit(1);
            }
            return;
        }
        _ => {
            eprintln!(
                "give both --workload and --peer (see the docs at the top of instructions.rs)"
            );
            std::process::exit(2);
        }
    };
    let sizes = if quick { Sizes::QUICK } else { Sizes::FULL };
    let inputs = Inputs::new(&sizes);
    match run(&inputs, &workload, &peer, setup_only) {
        Ok((operations, _)) => println!("operations: {operations}"),
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(2);
        }
    }
}
