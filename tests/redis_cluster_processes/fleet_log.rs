//! What the fleet's processes print, read back: one event per line, and
//! the tally by job id that the test's assertions read.

use core::time::Duration;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the epoch: the processes share the machine's clock.
pub(crate) fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// One line a child printed, with the child's index.
#[derive(Clone, Debug)]
pub(crate) enum Event {
    Answered { id: String, due: u64 },
    Refused { id: String, due: u64 },
    Got { id: String, at: u64, by: usize },
    Acked { id: String, at: u64, by: usize },
    Ready,
}

pub(crate) fn parse(line: &str, by: usize) -> Option<Event> {
    let f: Vec<&str> = line.split(' ').collect();
    let id = || f.get(1).map(|s| (*s).to_owned());
    let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
    Some(match f[0] {
        "OK" => Event::Answered {
            id: id()?,
            due: num(2)?,
        },
        "ERR" => Event::Refused {
            id: id()?,
            due: num(2)?,
        },
        "GOT" => Event::Got {
            id: id()?,
            at: num(3)?,
            by,
        },
        "ACK" => Event::Acked {
            id: id()?,
            at: num(2)?,
            by,
        },
        "READY" => Event::Ready,
        _ => return None,
    })
}

/// Whether consumer `by`, which works `work` on each job of a fetch in
/// turn, holds a job whose ack is at least 50 ms away.
pub(crate) fn holds_an_unacked_job(log: &[Event], by: usize, work: Duration) -> bool {
    let work = work.as_micros() as u64;
    let mut batch = (0, 0);
    let mut held = HashMap::new();
    for event in log {
        match event {
            Event::Got { id, by: b, at } if *b == by => {
                batch = if batch.0 == *at {
                    (*at, batch.1 + 1)
                } else {
                    (*at, 1)
                };
                held.insert(id.as_str(), at + batch.1 * work);
            }
            Event::Acked { id, by: b, .. } if *b == by => {
                held.remove(id.as_str());
            }
            _ => {}
        }
    }
    let now = now_us();
    held.values()
        .any(|earliest_ack| now + 50_000 < *earliest_ack)
}

/// What the fleet printed, by job id.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) answered: HashMap<String, u64>,
    pub(crate) refused: usize,
    pub(crate) due: HashMap<String, u64>,
    /// Each delivery: (when, which consumer).
    pub(crate) got: HashMap<String, Vec<(u64, usize)>>,
    pub(crate) acked: HashMap<String, Vec<(u64, usize)>>,
    /// Ids delivered more than once.
    pub(crate) again: Vec<String>,
}

impl Tally {
    pub(crate) fn of(log: &[Event]) -> Tally {
        let mut t = Tally::default();
        for event in log {
            match event.clone() {
                Event::Answered { id, due } => {
                    t.due.insert(id.clone(), due);
                    t.answered.insert(id, due);
                }
                Event::Refused { id, due } => {
                    t.due.insert(id, due);
                    t.refused += 1;
                }
                Event::Got { id, at, by } => t.got.entry(id).or_default().push((at, by)),
                Event::Acked { id, at, by } => t.acked.entry(id).or_default().push((at, by)),
                Event::Ready => {}
            }
        }
        // The readers of different children interleave: order by time.
        for gots in t.got.values_mut() {
            gots.sort_unstable();
        }
        t.again = t
            .got
            .iter()
            .filter(|(_, g)| g.len() > 1)
            .map(|(id, _)| id.clone())
            .collect();
        t
    }

    /// Whether consumer `by` got `id` and never acked it.
    pub(crate) fn held_by(&self, id: &str, by: usize) -> bool {
        self.got[id].iter().any(|g| g.1 == by) && !self.acked_by(id, by)
    }

    pub(crate) fn acked_by(&self, id: &str, by: usize) -> bool {
        self.acked
            .get(id)
            .is_some_and(|a| a.iter().any(|a| a.1 == by))
    }

    /// Whether the first delivery's consumer acked `id` within `[from, to]`.
    pub(crate) fn first_ack_within(&self, id: &str, from: u64, to: u64) -> bool {
        let first_by = self.got[id][0].1;
        self.acked.get(id).is_some_and(|a| {
            a.iter()
                .any(|&(at, by)| by == first_by && (from..=to).contains(&at))
        })
    }
}
