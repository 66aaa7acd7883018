//! `Wheel<u64>` against its peers, on the same workloads, in one run.
//!
//! Each workload is one criterion group named `workload/size`; each peer is
//! one function in it, so results land in
//! `target/criterion/<workload>_<size>/<peer>/` and `benches/report.py` can
//! put them side by side. Throughput is set to the number of operations, so
//! criterion reports per-operation rates.
//!
//! | group                               | per element            | timed                                              |
//! |-------------------------------------|------------------------|----------------------------------------------------|
//! | `w1_insert/1M`                      | one insert             | 1M inserts into an empty structure                 |
//! | `w1_expire/1M`                      | one fired timer        | tick-by-tick advance until all 1M have fired       |
//! | `w2_cancel_all/1M`                  | one insert + cancel    | 1M inserts, then 1M cancels in a shuffled order    |
//! | `w3_reset_heavy/100k_live_5M_resets`| one reset              | 5M resets of random live timers, a tick per 1,000  |
//! | `w4_churn/1M_live_1M_steps`         | one step               | insert + cancel a random key, a tick per 1,000     |
//!
//! Delays are uniform in `1..=65,536` ticks (1 ms ticks for the peers that
//! want durations). All inputs come from fixed-seed splitmix64 streams and
//! are generated before anything is timed; setup (pre-filling) and dropping
//! the structures are never timed. Every structure starts empty with no
//! reserved capacity (`Wheel::new()`, `BinaryHeap::new()`,
//! `LeanHeap::new()`, …), because not every peer can pre-reserve.
//!
//! Every peer must produce the same outcome (number fired, number
//! cancelled, sum of values seen) on each workload; the run prints the
//! outcomes and exits non-zero if they differ.
//!
//! After criterion, a full run also plays [`INTERLEAVED_ROUNDS`] rounds of
//! every workload in which tickwheel and the two heaps (the closest peers:
//! `binary_heap` and the 16-byte `lean_heap`) take turns, one iteration
//! each, in an order that cycles through all six orders of the three. The
//! machine is shared and its noise comes in bursts of seconds; criterion
//! measures one peer for seconds and then the next, so a burst can land on
//! one of them only. In a round all three run within seconds of each other,
//! so the per-round ratio is the robust comparison. Each workload gets two
//! lines, `heap/tickwheel` and `lean_heap/tickwheel`; they go to
//! `<criterion dir>/interleaved.txt`, and `report.py` prints them.
//!
//! Run with `cargo bench --bench compare`, then `python3 benches/report.py`.
//! Without `--bench` (e.g. `cargo test --benches`) every size is divided by
//! 100 and each benchmark runs once, as a smoke test.

extern crate alloc;

mod peers;

use core::cell::RefCell;
use core::hint::black_box;
use core::time::Duration;
use std::path::PathBuf;
use std::time::Instant;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use tickwheel::Wheel;

use peers::binary_heap::HeapTimers;
use peers::btree_map::BTreeTimers;
use peers::hhwt::HhwtPeer;
use peers::lean_heap::LeanHeap;
use peers::tokio_delay_queue::{paused_runtime, DelayQueuePeer, DqKey};
use peers::{Peer, MAX_DELAY};

/// Time moves one tick after this many operations in W3 and W4.
const OPS_PER_TICK: usize = 1_000;
/// W3: timers start (and are reset to) this many ticks ahead.
const W3_TIMEOUT: u64 = 30_000;

/// The sizes of every workload.
struct Sizes {
    /// W1 and W2: timers inserted.
    n: usize,
    /// W3: live timers, and resets over them.
    w3_live: usize,
    w3_resets: usize,
    /// W4: pre-filled timers, and steps.
    w4_live: usize,
    w4_steps: usize,
}

impl Sizes {
    const FULL: Sizes = Sizes {
        n: 1_000_000,
        w3_live: 100_000,
        w3_resets: 5_000_000,
        w4_live: 1_000_000,
        w4_steps: 1_000_000,
    };

    /// A smoke test: everything divided by 100.
    const QUICK: Sizes = Sizes {
        n: 10_000,
        w3_live: 1_000,
        w3_resets: 50_000,
        w4_live: 10_000,
        w4_steps: 10_000,
    };
}

/// All random inputs, generated once, before anything is measured.
struct Inputs {
    /// W1, W2, and the W4 pre-fill: delays from tick 0.
    delays: Vec<u64>,
    /// W2: the order of the cancels (a permutation of `0..n`).
    cancel_order: Vec<u32>,
    /// W3: which live timer each reset hits.
    reset_targets: Vec<u32>,
    /// W4: each step's insert delay and the position of its victim in the
    /// key list.
    step_delays: Vec<u64>,
    step_victims: Vec<u32>,
}

impl Inputs {
    fn new(sizes: &Sizes) -> Self {
        Inputs {
            delays: peers::delays(0x5EED_0001, sizes.n.max(sizes.w4_live)),
            cancel_order: peers::permutation(0x5EED_0002, sizes.n),
            reset_targets: peers::indices(0x5EED_0003, sizes.w3_resets, sizes.w3_live),
            step_delays: peers::delays(0x5EED_0004, sizes.w4_steps),
            step_victims: peers::indices(0x5EED_0005, sizes.w4_steps, sizes.w4_live),
        }
    }
}

/// What a run observed; every peer must agree on it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Outcome {
    fired: u64,
    cancelled: u64,
    /// Wrapping sum of every value fired or returned by a cancel.
    value_sum: u64,
}

/// One workload: a group of benchmarks, one per peer.
trait Workload {
    /// `workload/size`.
    fn group(&self) -> String;
    /// Operations per iteration, for criterion's throughput.
    fn elements(&self) -> u64;
    fn measurement_time(&self) -> Duration;
    /// Runs `iters` iterations, each on a fresh structure from `make`, and
    /// returns the time spent in the measured part only.
    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut() -> P) -> (Duration, Outcome);
}

/// `1_000_000` → `1M`, `100_000` → `100k`.
fn label(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}

/// W1, insert half: `n` inserts into an empty structure.
struct W1Insert<'a> {
    delays: &'a [u64],
}

impl Workload for W1Insert<'_> {
    fn group(&self) -> String {
        format!("w1_insert/{}", label(self.delays.len()))
    }

    fn elements(&self) -> u64 {
        self.delays.len() as u64
    }

    fn measurement_time(&self) -> Duration {
        Duration::from_secs(3)
    }

    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut() -> P) -> (Duration, Outcome) {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let mut peer = make();
            let start = Instant::now();
            for (value, &delay) in self.delays.iter().enumerate() {
                black_box(peer.insert(delay, value as u64));
            }
            total += start.elapsed();
            drop(black_box(peer));
        }
        (total, Outcome::default())
    }
}

/// W1, expire half: advance tick by tick over `n` pre-filled timers until
/// every one has fired.
struct W1Expire<'a> {
    delays: &'a [u64],
}

impl Workload for W1Expire<'_> {
    fn group(&self) -> String {
        format!("w1_expire/{}", label(self.delays.len()))
    }

    fn elements(&self) -> u64 {
        self.delays.len() as u64
    }

    fn measurement_time(&self) -> Duration {
        Duration::from_secs(5)
    }

    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut() -> P) -> (Duration, Outcome) {
        let n = self.delays.len() as u64;
        let mut total = Duration::ZERO;
        let mut outcome = Outcome::default();
        for _ in 0..iters {
            let mut peer = make();
            for (value, &delay) in self.delays.iter().enumerate() {
                peer.insert(delay, value as u64);
            }
            let (mut fired, mut value_sum) = (0, 0u64);
            let mut now = 0;
            let start = Instant::now();
            // A little slack past the longest delay, so that a peer that
            // fired late would still be counted (and show up as slower).
            while fired < n && now < MAX_DELAY + 64 {
                now += 1;
                peer.advance(now, |value| {
                    fired += 1;
                    value_sum = value_sum.wrapping_add(value);
                });
            }
            total += start.elapsed();
            assert_eq!(fired, n, "every timer fires, by tick {now}");
            assert_eq!(value_sum, n * (n - 1) / 2, "every value fires once");
            outcome = Outcome {
                fired,
                cancelled: 0,
                value_sum,
            };
            drop(black_box(peer));
        }
        (total, outcome)
    }
}

/// W2: `n` inserts, then `n` cancels in a shuffled order, timed together.
struct W2CancelAll<'a> {
    delays: &'a [u64],
    order: &'a [u32],
}

impl Workload for W2CancelAll<'_> {
    fn group(&self) -> String {
        format!("w2_cancel_all/{}", label(self.order.len()))
    }

    fn elements(&self) -> u64 {
        self.order.len() as u64
    }

    fn measurement_time(&self) -> Duration {
        Duration::from_secs(4)
    }

    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut() -> P) -> (Duration, Outcome) {
        let n = self.order.len();
        let mut total = Duration::ZERO;
        let mut outcome = Outcome::default();
        for _ in 0..iters {
            let mut peer = make();
            let mut keys = Vec::with_capacity(n);
            let mut value_sum = 0u64;
            let start = Instant::now();
            for (value, &delay) in self.delays[..n].iter().enumerate() {
                keys.push(peer.insert(delay, value as u64));
            }
            for &index in self.order {
                let value = peer.cancel(keys[index as usize]);
                assert_eq!(value, Some(u64::from(index)), "a pending timer cancels");
                value_sum = value_sum.wrapping_add(u64::from(index));
            }
            total += start.elapsed();
            outcome = Outcome {
                fired: 0,
                cancelled: n as u64,
                value_sum,
            };
            drop(black_box((peer, keys)));
        }
        (total, outcome)
    }
}

/// W3: `live` timers at `W3_TIMEOUT`, then resets of random ones to
/// `now + W3_TIMEOUT`, a tick every `OPS_PER_TICK` resets.
struct W3ResetHeavy<'a> {
    live: usize,
    targets: &'a [u32],
}

impl Workload for W3ResetHeavy<'_> {
    fn group(&self) -> String {
        format!(
            "w3_reset_heavy/{}_live_{}_resets",
            label(self.live),
            label(self.targets.len())
        )
    }

    fn elements(&self) -> u64 {
        self.targets.len() as u64
    }

    fn measurement_time(&self) -> Duration {
        Duration::from_secs(5)
    }

    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut() -> P) -> (Duration, Outcome) {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let mut peer = make();
            let keys: Vec<P::Key> = (0..self.live as u64)
                .map(|value| peer.insert(W3_TIMEOUT, value))
                .collect();
            let mut now = 0;
            let mut fired = 0u64;
            let start = Instant::now();
            for chunk in self.targets.chunks(OPS_PER_TICK) {
                for &target in chunk {
                    let reset = peer.reset(keys[target as usize], now + W3_TIMEOUT);
                    assert!(reset, "every timer is live");
                }
                now += 1;
                peer.advance(now, |_| fired += 1);
            }
            total += start.elapsed();
            assert_eq!(fired, 0, "nothing comes due");
            drop(black_box((peer, keys)));
        }
        (total, Outcome::default())
    }
}

/// W4: `live` pre-filled timers; each step inserts one and cancels a random
/// key from the list of keys, a tick every `OPS_PER_TICK` steps.
struct W4Churn<'a> {
    prefill: &'a [u64],
    step_delays: &'a [u64],
    victims: &'a [u32],
}

impl Workload for W4Churn<'_> {
    fn group(&self) -> String {
        format!(
            "w4_churn/{}_live_{}_steps",
            label(self.prefill.len()),
            label(self.victims.len())
        )
    }

    fn elements(&self) -> u64 {
        self.victims.len() as u64
    }

    fn measurement_time(&self) -> Duration {
        Duration::from_secs(4)
    }

    fn run<P: Peer>(&self, iters: u64, make: &mut impl FnMut() -> P) -> (Duration, Outcome) {
        let live = self.prefill.len();
        let mut total = Duration::ZERO;
        let mut outcome = Outcome::default();
        for _ in 0..iters {
            let mut peer = make();
            let mut keys: Vec<P::Key> = Vec::with_capacity(live + 1);
            for (value, &delay) in self.prefill.iter().enumerate() {
                keys.push(peer.insert(delay, value as u64));
            }
            let mut seen = Outcome::default();
            let mut value = live as u64;
            let mut now = 0;
            let start = Instant::now();
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
                }
                now += 1;
                peer.advance(now, |fired| {
                    seen.fired += 1;
                    seen.value_sum = seen.value_sum.wrapping_add(fired);
                });
            }
            total += start.elapsed();
            outcome = seen;
            drop(black_box((peer, keys)));
        }
        (total, outcome)
    }
}

/// Rounds of the interleaved comparison of tickwheel and the two heaps: a
/// multiple of 6, so each of the [`TURN_ORDERS`] comes up equally often.
const INTERLEAVED_ROUNDS: usize = 12;

/// The interleaved peers, by index: tickwheel, binary_heap, lean_heap.
const WHEEL: usize = 0;
const HEAP: usize = 1;
const LEAN: usize = 2;

/// Every order of the three interleaved peers, cycled through round by
/// round: each peer moves first, second and last equally often, and each
/// goes before each other equally often.
const TURN_ORDERS: [[usize; 3]; 6] = [
    [WHEEL, HEAP, LEAN],
    [HEAP, LEAN, WHEEL],
    [LEAN, WHEEL, HEAP],
    [WHEEL, LEAN, HEAP],
    [LEAN, HEAP, WHEEL],
    [HEAP, WHEEL, LEAN],
];

/// One workload's interleaved rounds: each heap's time ÷ tickwheel's time
/// per round, as two lines (`binary_heap`, then `lean_heap`).
fn interleave<W: Workload>(workload: &W, rounds: usize) -> [String; 2] {
    let mut ns: [Vec<f64>; 3] = core::array::from_fn(|_| Vec::with_capacity(rounds));
    let per_op = |time: Duration| time.as_nanos() as f64 / workload.elements() as f64;
    for round in 0..rounds {
        for peer in TURN_ORDERS[round % TURN_ORDERS.len()] {
            let time = match peer {
                WHEEL => workload.run(1, &mut Wheel::<u64>::new).0,
                HEAP => workload.run(1, &mut HeapTimers::<u64>::new).0,
                _ => workload.run(1, &mut LeanHeap::new).0,
            };
            ns[peer].push(per_op(time));
        }
    }
    let group = workload.group();
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
    let median = |values: &[f64]| {
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
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

/// The outcomes of every group, checked after the run.
#[derive(Default)]
struct Checks {
    groups: Vec<(String, Vec<(&'static str, Outcome)>)>,
}

impl Checks {
    /// Prints every group's outcomes; `false` if some peer disagrees.
    fn report(&self) -> bool {
        let mut agree = true;
        println!("\noutcomes (every peer must agree):");
        for (group, outcomes) in &self.groups {
            let same = outcomes.windows(2).all(|w| w[0].1 == w[1].1);
            agree &= same;
            println!("  {group}: {}", if same { "agree" } else { "DISAGREE" });
            for (peer, outcome) in outcomes {
                println!(
                    "    {peer:<18} fired {:>9}  cancelled {:>9}  value sum {:>20}",
                    outcome.fired, outcome.cancelled, outcome.value_sum
                );
            }
        }
        agree
    }
}

fn bench_peer<W: Workload, P: Peer>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    workload: &W,
    name: &'static str,
    outcomes: &RefCell<Vec<(&'static str, Outcome)>>,
    mut make: impl FnMut() -> P,
) {
    let mut last = None;
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let (time, outcome) = workload.run(iters, &mut make);
            last = Some(outcome);
            time
        });
    });
    if let Some(outcome) = last {
        outcomes.borrow_mut().push((name, outcome));
    }
}

fn bench_workload<W: Workload>(c: &mut Criterion, workload: &W, checks: &mut Checks) {
    let name = workload.group();
    let mut group = c.benchmark_group(&name);
    // Each iteration is a whole batch of 10^5–10^6 operations: ten samples,
    // one or a few iterations each, are plenty.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(workload.measurement_time())
        .throughput(Throughput::Elements(workload.elements()));
    let outcomes = RefCell::new(Vec::new());

    bench_peer(
        &mut group,
        workload,
        "tickwheel",
        &outcomes,
        Wheel::<u64>::new,
    );
    bench_peer(
        &mut group,
        workload,
        "binary_heap",
        &outcomes,
        HeapTimers::<u64>::new,
    );
    bench_peer(&mut group, workload, "lean_heap", &outcomes, LeanHeap::new);
    bench_peer(
        &mut group,
        workload,
        "btree_map",
        &outcomes,
        BTreeTimers::<u64>::new,
    );
    {
        let runtime = paused_runtime();
        let _context = runtime.enter();
        let reinserted = core::cell::Cell::new(0);
        bench_peer(&mut group, workload, "tokio_delay_queue", &outcomes, || {
            DelayQueueReport::new(DelayQueuePeer::new(&runtime), &reinserted)
        });
        if reinserted.get() > 0 {
            println!(
                "{name}/tokio_delay_queue: {} stale cancels hit a reused slab index \
                 (the item was put back), over all iterations",
                reinserted.get()
            );
        }
    }
    bench_peer(&mut group, workload, "hhwt", &outcomes, HhwtPeer::new);

    group.finish();
    checks.groups.push((name, outcomes.into_inner()));
}

/// A `DelayQueuePeer` that adds its count of put-back items to a total when
/// dropped (outside the timed region).
struct DelayQueueReport<'rt, 'c> {
    inner: DelayQueuePeer<'rt>,
    total: &'c core::cell::Cell<u64>,
}

impl<'rt, 'c> DelayQueueReport<'rt, 'c> {
    fn new(inner: DelayQueuePeer<'rt>, total: &'c core::cell::Cell<u64>) -> Self {
        DelayQueueReport { inner, total }
    }
}

impl Drop for DelayQueueReport<'_, '_> {
    fn drop(&mut self) {
        self.total.set(self.total.get() + self.inner.reinserted());
    }
}

impl Peer for DelayQueueReport<'_, '_> {
    type Key = DqKey;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> DqKey {
        self.inner.insert(deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: DqKey) -> Option<u64> {
        self.inner.cancel(key)
    }

    #[inline]
    fn reset(&mut self, key: DqKey, deadline: u64) -> bool {
        self.inner.reset(key, deadline)
    }

    fn advance(&mut self, now: u64, fired: impl FnMut(u64)) {
        self.inner.advance(now, fired);
    }
}

/// Where criterion writes: `$CRITERION_HOME`, `$CARGO_TARGET_DIR/criterion`
/// or `target/criterion`.
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| "target".into(), PathBuf::from);
    target.join("criterion")
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The machine the numbers belong to: CPU, cores, compiler, source state.
fn machine_line() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split(':').nth(1))
        .map_or("unknown CPU", str::trim);
    let hypervisor = if cpuinfo.contains(" hypervisor") {
        ", virtualised"
    } else {
        ""
    };
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let rustc = command_line(&rustc, &["--version"]).unwrap_or_else(|| "rustc ?".to_owned());
    let commit =
        command_line("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".to_owned());
    let dirty = command_line("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    format!(
        "{model}, {cpus} CPUs{hypervisor}, {} {}; {rustc}; tickwheel at {commit}{}",
        std::env::consts::OS,
        std::env::consts::ARCH,
        if dirty { " + uncommitted changes" } else { "" },
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|load| {
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "?".to_owned())
}

fn main() {
    let full = std::env::args().any(|arg| arg == "--bench");
    let sizes = if full { Sizes::FULL } else { Sizes::QUICK };
    let machine = machine_line();
    let load_start = load_average();
    println!("machine: {machine}");
    println!("load average at start: {load_start}");
    if !full {
        println!("(no --bench: a smoke test at 1/100 of the sizes)");
    }

    peers::binary_heap::self_check();
    peers::lean_heap::self_check();
    let inputs = Inputs::new(&sizes);
    let n = sizes.n;

    let started = Instant::now();
    let mut c = Criterion::default().configure_from_args();
    let mut checks = Checks::default();
    bench_workload(
        &mut c,
        &W1Insert {
            delays: &inputs.delays[..n],
        },
        &mut checks,
    );
    bench_workload(
        &mut c,
        &W1Expire {
            delays: &inputs.delays[..n],
        },
        &mut checks,
    );
    let w2 = W2CancelAll {
        delays: &inputs.delays[..n],
        order: &inputs.cancel_order,
    };
    bench_workload(&mut c, &w2, &mut checks);
    let w3 = W3ResetHeavy {
        live: sizes.w3_live,
        targets: &inputs.reset_targets,
    };
    bench_workload(&mut c, &w3, &mut checks);
    let w4 = W4Churn {
        prefill: &inputs.delays[..sizes.w4_live],
        step_delays: &inputs.step_delays,
        victims: &inputs.step_victims,
    };
    bench_workload(&mut c, &w4, &mut checks);
    c.final_summary();

    // A filtered run (`cargo bench --bench compare -- w2`) is for one
    // workload's numbers; the interleaved rounds belong to a full run.
    let filtered = std::env::args().skip(1).any(|arg| !arg.starts_with('-'));
    let rounds = if full { INTERLEAVED_ROUNDS } else { 2 };
    let interleaved = if filtered {
        Vec::new()
    } else {
        println!("\ninterleaved rounds, tickwheel vs binary_heap and lean_heap:");
        let w1_insert = W1Insert {
            delays: &inputs.delays[..n],
        };
        let w1_expire = W1Expire {
            delays: &inputs.delays[..n],
        };
        let lines = [
            interleave(&w1_insert, rounds),
            interleave(&w1_expire, rounds),
            interleave(&w2, rounds),
            interleave(&w3, rounds),
            interleave(&w4, rounds),
        ]
        .concat();
        for line in &lines {
            println!("  {line}");
        }
        lines
    };

    let load_end = load_average();
    let elapsed = started.elapsed().as_secs();
    println!("load average at end: {load_end} (benchmarks took {elapsed} s)");
    if full {
        let record = format!(
            "machine: {machine}\nload average at start: {load_start}\nload average at end: {load_end}\nduration: {elapsed} s\n"
        );
        let dir = criterion_dir();
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(dir.join("machine.txt"), record))
            .and_then(|()| {
                if interleaved.is_empty() {
                    return Ok(());
                }
                let mut text = interleaved.join("\n");
                text.push('\n');
                std::fs::write(dir.join("interleaved.txt"), text)
            });
        if let Err(err) = written {
            eprintln!(
                "could not record the machine line in {}: {err}",
                dir.display()
            );
        }
    }
    if !checks.report() {
        eprintln!("peers disagree on an outcome: the comparison is not like for like");
        std::process::exit(1);
    }
}
