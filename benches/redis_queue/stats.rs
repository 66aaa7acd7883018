//! What the server and this process report: CPU time, `INFO`
//! commandstats, and the machine the numbers belong to.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::time::Duration;
use std::process::Command;
use std::time::Instant;

use crate::cpu::process_cpu;
use crate::redis_server::RedisServer;

/// `INFO` sections as `field -> value`.
pub(crate) fn info(server: &RedisServer, sections: &[&str]) -> BTreeMap<String, String> {
    let mut args = vec!["INFO"];
    args.extend_from_slice(sections);
    server
        .command(&args)
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// redis-server's CPU time so far, user + system, in seconds (`INFO cpu`).
pub(crate) fn redis_cpu(info: &BTreeMap<String, String>) -> f64 {
    ["used_cpu_sys", "used_cpu_user"]
        .iter()
        .map(|k| {
            info.get(*k)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum()
}

/// Zeroes the server's command counters (`CONFIG RESETSTAT`).
pub(crate) fn reset_counts(server: &RedisServer) {
    server.command(&["CONFIG", "RESETSTAT"]);
}

/// Calls per command since [`reset_counts`] (`INFO commandstats`,
/// commands run inside Lua scripts included), less the `RESETSTAT`
/// itself; the `INFO` that reads them does not count itself.
pub(crate) fn command_counts(server: &RedisServer) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    let mut usec = Vec::new();
    for (k, v) in info(server, &["commandstats"]) {
        let Some(name) = k.strip_prefix("cmdstat_") else {
            continue;
        };
        let field = |f: &str| -> u64 {
            v.split(',')
                .find_map(|kv| kv.strip_prefix(f))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        let n = field("calls=");
        let n = if name == "config|resetstat" { n - 1 } else { n };
        if n > 0 {
            calls.insert(name.to_string(), n);
            usec.push(format!("{name} {n} calls {} µs", field("usec=")));
        }
    }
    // For the log: the server's time in each command (a script's includes
    // the commands it calls).
    eprintln!("commandstats: {}", usec.join(", "));
    calls
}

/// A point to measure CPU from: this process's and the server's.
pub(crate) struct Snapshot {
    at: Instant,
    process: Duration,
    redis: f64,
}

/// Time and CPU spent between a [`Snapshot`] and now.
#[derive(Clone, Copy, Default)]
pub(crate) struct Usage {
    pub(crate) elapsed: f64,
    /// The client process's CPU, user + system, seconds.
    pub(crate) process: f64,
    /// redis-server's CPU, user + system, seconds.
    pub(crate) redis: f64,
}

impl Snapshot {
    pub(crate) fn take(server: &RedisServer) -> Snapshot {
        let redis = redis_cpu(&info(server, &["cpu"]));
        Snapshot {
            at: Instant::now(),
            process: process_cpu(),
            redis,
        }
    }

    pub(crate) fn usage(&self, server: &RedisServer) -> Usage {
        let process = process_cpu().saturating_sub(self.process).as_secs_f64();
        let elapsed = self.at.elapsed().as_secs_f64();
        let redis = redis_cpu(&info(server, &["cpu"])) - self.redis;
        Usage {
            elapsed,
            process,
            redis,
        }
    }
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `uname -srm`, the CPU model, cores, rustc and the source's commit.
pub(crate) fn machine_line() -> String {
    let uname = output("uname", &["-srm"]).unwrap_or_else(|| "?".to_string());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .and_then(|rest| rest.split(':').nth(1))
        .map_or("unknown CPU", str::trim)
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc = output(&rustc, &["--version"]).unwrap_or_else(|| "rustc ?".to_string());
    let commit = output("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".into());
    format!("{uname}; {model}; {cores} cores; {rustc}; tickwheel at {commit}")
}

/// `redis_version` and `hz` of the server.
pub(crate) fn redis_line(server: &RedisServer) -> String {
    let server_info = info(server, &["server"]);
    let config = server.command(&["CONFIG", "GET", "hz"]);
    let hz = config.lines().nth(4).unwrap_or("?");
    format!(
        "redis-server {} on {} (AOF on, appendfsync everysec, hz {hz})",
        server_info.get("redis_version").map_or("?", String::as_str),
        server.addr()
    )
}
