//! The command line, as clap parses it.

use core::time::Duration;
use std::path::PathBuf;

use clap::{ArgGroup, Parser, Subcommand, ValueEnum};

/// Inspect and repair a tickwheel Redis queue or journal.
#[derive(Debug, Parser)]
#[command(name = "tickwheel-admin", version)]
#[command(group(ArgGroup::new("target").required(true).args(["url", "nodes", "journal"])))]
pub(crate) struct Cli {
    /// The Redis server of the queue (`redis://host:port`, `rediss://…`);
    /// with `--sentinel`, the master as Sentinel names it
    /// (`redis://[:password@]name[/db]`).
    #[arg(long, global = true, requires = "queue", conflicts_with = "journal")]
    pub(crate) url: Option<String>,
    /// A seed node of the Redis Cluster the queue is on, instead of
    /// `--url` (repeat for more).
    #[arg(long = "node", global = true, requires = "queue", conflicts_with_all = ["journal", "url"])]
    pub(crate) nodes: Vec<String>,
    /// A Redis Sentinel that knows the queue's master (repeat for more);
    /// `--url` then names the master.
    #[arg(long = "sentinel", global = true, requires = "url")]
    pub(crate) sentinels: Vec<String>,
    /// The queue's name (with `--url`).
    #[arg(long, global = true)]
    pub(crate) queue: Option<String>,
    /// A journal file (`persist::DurableTimer`), instead of a queue.
    #[arg(long, global = true)]
    pub(crate) journal: Option<PathBuf>,
    /// One JSON object per line instead of text.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Counts, and when the next job is due.
    Stats,
    /// One page of jobs, and the cursor of the next.
    Ls {
        /// Which jobs (a journal lists `pending` only).
        what: Listing,
        /// Jobs per page (1 to 1000).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: u16,
        /// Where the page starts: the cursor (a journal: the job id) the
        /// last page printed as next.
        #[arg(long)]
        after: Option<String>,
    },
    /// One job: state, due time, attempts, payload.
    Show {
        /// The job's id (a journal: its key).
        id: String,
    },
    /// Cancels a job that has not run.
    Cancel {
        /// The job's id (a journal: its key).
        id: String,
    },
    /// Moves dead letters back to waiting, due now.
    #[command(group(ArgGroup::new("which").required(true).args(["id", "all"])))]
    Requeue {
        /// The dead letter's id.
        id: Option<String>,
        /// Every dead letter there when it starts (those that die again
        /// while it runs stay dead).
        #[arg(long)]
        all: bool,
    },
    /// Deletes dead letters, in bounded batches.
    Purge {
        /// What to purge.
        what: Purgeable,
    },
    /// The job schedulers (recurring jobs): key and timetable; for a
    /// queue, the version and how far ahead its runs are made; for a
    /// journal, the id and the next run.
    Schedules,
    /// Removes a job scheduler and cancels its runs still waiting.
    Unschedule {
        /// The scheduler's key.
        key: String,
    },
    /// A live view of the queue, refreshed in place (a journal: read
    /// without its lock, so it shows one a running process owns).
    Watch {
        /// Time between refreshes (`500ms`, `1s`, `2m`).
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        every: Duration,
        /// Show one refresh and exit.
        #[arg(long, conflicts_with = "count")]
        once: bool,
        /// Show this many refreshes and exit (at least one).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        count: Option<u64>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Listing {
    /// Waiting jobs, earliest due first (a journal: every pending job,
    /// keyed or not, in id order).
    Pending,
    /// Waiting jobs whose due time has passed (by this machine's clock).
    Due,
    /// Jobs a consumer holds, the soonest lease to end first.
    Inflight,
    /// Dead letters, oldest first.
    Dead,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Purgeable {
    /// The dead letters.
    Dead,
}

/// `250ms`, `1s`, `1.5s`, `2m`: a number and a unit.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 500ms, 1s or 2m"))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" | "" => number,
        "m" => number * 60.0,
        _ => return Err(format!("unknown unit `{unit}` (ms, s or m)")),
    };
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("`{text}` is not a positive duration"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_their_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("1h").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
