//! `tickwheel-admin`: an operator's tool for a tickwheel Redis queue
//! (`--url … --queue …`) or journal (`--journal …`): counts, paged
//! listings, one job, cancel, requeue, purge, and a live view.
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
    let done = match (&cli.url, &cli.queue, &cli.journal) {
        (Some(url), Some(name), None) => Queue::connect(url, name)
            .map_err(|err| format!("cannot open queue {name:?}: {err}"))
            .and_then(|queue| queue_commands::run(&queue, cli.command, &out)),
        (None, _, Some(path)) => journal_commands::run(path, cli.command, &out),
        // clap's groups rule the rest out.
        _ => Err(String::from("give --url and --queue, or --journal")),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tickwheel-admin: {message}");
            ExitCode::FAILURE
        }
    }
}
