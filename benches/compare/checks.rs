//! The outcomes every peer reported, kept through the run and checked
//! after it: every peer must agree on each workload.

use crate::workloads::server::Tally;
use crate::workloads::Outcome;

/// Peers documented to fire early (`peers/bitwheel.rs`): their outcome is
/// printed with its counts but not required to match the exact peers'.
pub(crate) const FIRES_EARLY: [&str; 1] = ["bitwheel"];

/// The outcomes of every group, checked after the run.
#[derive(Default)]
pub(crate) struct Checks {
    pub(crate) groups: Vec<(String, Vec<(&'static str, Outcome)>)>,
    pub(crate) loops: Vec<(String, Vec<(&'static str, Tally)>)>,
}

impl Checks {
    /// Prints every group's outcomes; `false` if some peer disagrees.
    pub(crate) fn report(&self) -> bool {
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
        println!(
            "\nserver loops (exact peers must agree and fire nothing early, late or cancelled; \
             {FIRES_EARLY:?} fire early by design and are reported only):"
        );
        for (group, tallies) in &self.loops {
            let exact: Vec<_> = tallies
                .iter()
                .filter(|(peer, _)| !FIRES_EARLY.contains(peer))
                .collect();
            let same = exact.windows(2).all(|w| w[0].1.seen() == w[1].1.seen())
                && exact.iter().all(|(_, tally)| tally.exact());
            agree &= same;
            println!("  {group}: {}", if same { "agree" } else { "DISAGREE" });
            for (peer, tally) in tallies {
                println!(
                    "    {peer:<18} fired {:>9}  cancelled {:>9}  value sum {:>20}  early {:>7} (max {:>4} ticks)  late {:>5}  zombies {:>5}  lost {:>5}  page faults {:>6}",
                    tally.outcome.fired,
                    tally.outcome.cancelled,
                    tally.outcome.value_sum,
                    tally.early,
                    tally.max_early,
                    tally.late,
                    tally.zombies,
                    tally.lost,
                    tally.faults
                );
            }
        }
        agree
    }
}
