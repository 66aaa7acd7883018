//! Running the `tickwheel-admin` binary from the tests (`admin_cli.rs`
//! against Redis, `admin_journal.rs` against journal files): its `--json`
//! lines parsed, its plain output, and its pages followed to the end.

use core::time::Duration;
use std::process::Command;
use std::time::SystemTime;

use serde_json::Value;

use crate::redis_server::RedisServer;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_tickwheel-admin");

/// What a run of the tool gave: its exit code, its JSON lines, stderr.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) lines: Vec<Value>,
    pub(crate) stderr: String,
}

impl Run {
    /// The lines of one type.
    pub(crate) fn of(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == kind).collect()
    }

    /// The one line of `kind`.
    pub(crate) fn one(&self, kind: &str) -> &Value {
        let found = self.of(kind);
        assert_eq!(found.len(), 1, "{kind} lines: {:?}", self.lines);
        found[0]
    }
}

pub(crate) fn run(target: &[&str], args: &[&str]) -> Run {
    let output = Command::new(BIN)
        .args(target)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        lines: stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}")))
            .collect(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// A successful run.
pub(crate) fn ok(target: &[&str], args: &[&str]) -> Run {
    let done = run(target, args);
    assert_eq!(done.code, 0, "{args:?}: {}", done.stderr);
    done
}

pub(crate) fn queue_args(server: &RedisServer) -> Vec<String> {
    vec![
        "--url".into(),
        server.url(),
        "--queue".into(),
        "orders".into(),
    ]
}

pub(crate) fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

pub(crate) fn at(micros: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_micros(micros)
}

/// 2096-10-02T07:06:40Z, in microseconds: later than any clock these tests run under.
pub(crate) const BASE: u64 = 4_000_000_000_000_000;

/// Every page of `ls what`, following the cursors: the job lines, and each
/// page's time in Redis.
pub(crate) fn walk(target: &[&str], what: &str, limit: usize) -> (Vec<Value>, Vec<f64>) {
    let (mut jobs, mut times) = (Vec::new(), Vec::new());
    let mut after: Option<String> = None;
    loop {
        let limit = limit.to_string();
        let mut args = vec!["ls", what, "--limit", &limit];
        if let Some(after) = &after {
            args.extend(["--after", after]);
        }
        let page = ok(target, &args);
        jobs.extend(page.of("job").into_iter().cloned());
        let summary = page.one("page");
        times.push(summary["elapsed_ms"].as_f64().unwrap());
        match summary["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return (jobs, times),
        }
    }
}

/// The tool run without `--json`: its stdout, after a successful exit.
pub(crate) fn plain(target: &[&str], args: &[&str]) -> String {
    let output = Command::new(BIN).args(target).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}
