//! `tickwheel-admin`: an operator's tool for a tickwheel Redis queue
//! (`--url … --queue …`; `--node …` for a Redis Cluster, `--sentinel …`
//! for a master behind Redis Sentinel) or journal (`--journal …`):
//! counts, paged listings, one job, cancel, requeue, purge, and a live
//! view.
//!
//! Exit codes: 0 done; 1 an error, said in one line on stderr; 2 bad
//! arguments (clap's usage error).

extern crate alloc;

mod args;
mod journal_commands;
mod journal_watch;
mod output;
mod queue_commands;
mod watch;

use std::process::ExitCode;

use clap::Parser;
use tickwheel::redis::Queue;

use args::Cli;
use output::Out;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let out = Out { json: cli.json };
    let nodes: Vec<&str> = cli.nodes.iter().map(String::as_str).collect();
    let sentinels: Vec<&str> = cli.sentinels.iter().map(String::as_str).collect();
    let builder = match (&cli.url, &cli.queue, &cli.journal) {
        (Some(url), Some(name), None) if !sentinels.is_empty() => {
            Some((Queue::sentinel_builder(&sentinels, url, name), name))
        }
        (Some(url), Some(name), None) => Some((Queue::builder(url, name), name)),
        (None, Some(name), None) if !nodes.is_empty() => {
            Some((Queue::cluster_builder(&nodes, name), name))
        }
        _ => None,
    };
    let done = match (builder, &cli.journal) {
        // An admin tool inspects queues: it creates none (a mistyped name
        // would store a partition count that later builders must match),
        // and forgets no ended jobs by its own retention. It opens one on a
        // server that may evict its keys (when an operator most needs to
        // look in and drain it; it once refused, with no way to allow it),
        // and says so.
        (Some((builder, name)), None) => builder
            .existing_only()
            .allow_eviction(true)
            .connect()
            .map_err(|err| format!("cannot open queue {name:?}: {err}"))
            .and_then(|queue| {
                if let Some(policy) = queue.eviction_policy().filter(|p| p.starts_with("allkeys")) {
                    eprintln!(
                        "tickwheel-admin: warning: the server may evict the queue's keys \
                         (maxmemory-policy {policy}), which loses jobs: set it to noeviction"
                    );
                }
                queue_commands::run(&queue, cli.command, &out)
            }),
        (None, Some(path)) => journal_commands::run(path, cli.command, &out),
        // clap's groups rule the rest out.
        _ => Err(String::from(
            "give --url (or --node) and --queue, or --journal",
        )),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tickwheel-admin: {message}");
            ExitCode::FAILURE
        }
    }
}
