//! Child processes of a test: this test binary run again for one of its
//! own `#[ignore]`d tests (the child side of a multi-process test), so a
//! test can SIGKILL a real producer or consumer process.
//!
//! Include it with `#[path = "support/children.rs"] mod children;`.

use std::process::{Child, Command, Stdio};

/// Starts this test binary's ignored test `name` alone, with `env` set,
/// its stdout piped (a child prints one line per event, after an empty
/// line that ends the harness's unfinished `test name ... `), its stderr
/// the parent's.
pub(crate) fn spawn(name: &str, env: &[(&str, String)]) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start a child test process")
}
