//! The BullMQ peer (`benches/peers/bullmq/bench.mjs`), run by node: one
//! workload a process, one JSON line on its stdout.

use alloc::string::{String, ToString};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::redis_server::RedisServer;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peers/bullmq");

pub(crate) struct BullMq {
    ready: Result<(), String>,
}

impl BullMq {
    /// Checks for node, and runs `npm ci` if BullMQ is not installed.
    pub(crate) fn prepare() -> BullMq {
        let ready = (|| {
            if std::env::args().any(|a| a == "--no-bullmq") {
                return Err("left out (--no-bullmq)".to_string());
            }
            let node = Command::new("node")
                .arg("--version")
                .output()
                .map_err(|e| format!("node: {e}"))?;
            if !node.status.success() {
                return Err("node --version failed".to_string());
            }
            if !Path::new(DIR).join("node_modules/bullmq").exists() {
                eprintln!("installing BullMQ: npm ci in {DIR}");
                let status = Command::new("npm")
                    .arg("ci")
                    .current_dir(DIR)
                    .status()
                    .map_err(|e| format!("npm: {e}"))?;
                if !status.success() {
                    return Err("npm ci failed".to_string());
                }
            }
            Ok(())
        })();
        BullMq { ready }
    }

    /// Why BullMQ did not run: it cannot, or the run failed.
    pub(crate) fn why(&self) -> String {
        match &self.ready {
            Ok(()) => "failed (its stderr is above)".to_string(),
            Err(why) => why.clone(),
        }
    }

    /// Runs `workload` against `server` with `--flag value` arguments; its
    /// JSON, or `None` (said on stderr) if it failed.
    pub(crate) fn run(
        &self,
        server: &RedisServer,
        workload: &str,
        args: &[(&str, usize)],
    ) -> Option<Value> {
        if self.ready.is_err() {
            return None;
        }
        let mut cmd = Command::new("node");
        cmd.arg(Path::new(DIR).join("bench.mjs")).args([
            "--port",
            &server.port().to_string(),
            "--workload",
            workload,
        ]);
        for (flag, value) in args {
            cmd.args([flag.to_string(), value.to_string()]);
        }
        let out = cmd.output().expect("node");
        if !out.status.success() {
            eprintln!(
                "BullMQ {workload} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str(text.trim()) {
            Ok(json) => Some(json),
            Err(e) => {
                eprintln!("BullMQ {workload}: no JSON ({e}): {text}");
                None
            }
        }
    }
}

/// A number of the JSON, NaN if absent.
pub(crate) fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}
