//! The JDK's `ScheduledThreadPoolExecutor` as a peer: `StpePrecision.java`
//! compiled once with `javac`, then one `java` process per run, fed the
//! run's offsets on stdin (see that file for what it prints).

use core::time::Duration;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::Run;

/// Timers of the warm-up run the JVM plays before the measured one.
const WARMUP: usize = 20_000;

/// A compiled `StpePrecision` and the `java` that runs it.
pub(crate) struct Jdk {
    classes: PathBuf,
}

impl Jdk {
    /// Compiles the peer; `None`, said plainly, when there is no JDK.
    pub(crate) fn build() -> Option<Jdk> {
        let classes = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jdk-precision");
        let source = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/peers/jdk/StpePrecision.java"
        );
        let compiled = Command::new("javac")
            .arg("-d")
            .arg(&classes)
            .arg(source)
            .status();
        let runs = Command::new("java")
            .arg("-version")
            .stderr(Stdio::null())
            .status();
        match (compiled, runs) {
            (Ok(c), Ok(r)) if c.success() && r.success() => Some(Jdk { classes }),
            (compiled, runs) => {
                println!(
                    "JDK STPE did not run: no working JDK here (javac: {compiled:?}, java: \
                     {runs:?}); install one (Debian: openjdk-17-jdk-headless) for that row"
                );
                None
            }
        }
    }

    /// One run: the timers due `lead` + each offset after the JVM's first
    /// schedule.
    pub(crate) fn run(&self, offsets: &[Duration], lead: Duration) -> Run {
        let mut child = Command::new("java")
            .arg("-cp")
            .arg(&self.classes)
            .arg("StpePrecision")
            .arg("1")
            .arg(lead.as_nanos().to_string())
            .arg(WARMUP.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start java");
        let mut input = String::with_capacity(offsets.len() * 11);
        for offset in offsets {
            input.push_str(&offset.as_nanos().to_string());
            input.push('\n');
        }
        let mut stdin = child.stdin.take().expect("java's stdin");
        stdin
            .write_all(input.as_bytes())
            .expect("write the offsets");
        drop(stdin);
        let out = child.wait_with_output().expect("java's answer");
        assert!(out.status.success(), "java failed: {}", out.status);
        let text = String::from_utf8(out.stdout).expect("java prints text");
        let mut lines = text.lines();
        let head: Vec<u64> = lines
            .next()
            .expect("java's first line")
            .split(' ')
            .map(|n| n.parse().expect("a count"))
            .collect();
        let late: Vec<i64> = lines
            .next()
            .expect("java's samples")
            .split(' ')
            .map(|n| n.parse().expect("a lateness"))
            .collect();
        assert_eq!(late.len(), offsets.len(), "one sample per timer");
        Run {
            late,
            cpu: Duration::from_nanos(head[0]),
            wakeups: head[1],
            span: Duration::from_nanos(head[2]),
            stats: None,
        }
    }
}
