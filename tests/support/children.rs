//! Child processes of a test: this test binary run again for one of its
//! own `#[ignore]`d tests (the child side of a multi-process test), so a
//! test can SIGKILL a real producer or consumer process.
//!
//! A test binary is a folder of modules (`tests/<group>/main.rs`), so a
//! test's name is its module path without the crate's: `test_name` makes
//! it from the caller's `module_path!()`.

#![allow(dead_code)]

use std::process::{Child, Command, Stdio};

/// The harness's name for test `name` of the module at `module` (its
/// `module_path!()`): the path without the crate's name.
pub(crate) fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

/// Starts this test binary's ignored test `name` of the module at
/// `module` (the caller's `module_path!()`) alone, with `env` set,
/// its stdout piped (a child prints one line per event, after an empty
/// line that ends the harness's unfinished `test name ... `), its stderr
/// the parent's.
pub(crate) fn spawn(module: &str, name: &str, env: &[(&str, String)]) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            test_name(module, name).as_str(),
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
