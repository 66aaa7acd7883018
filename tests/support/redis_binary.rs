//! Where the test harness finds `redis-server` (`redis_server.rs`), and
//! what it says when there is none.

// As in `redis_server.rs`: whatever crate includes it.
extern crate alloc;

use alloc::format;
use alloc::vec::Vec;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Whether the Redis tests must skip: no `redis-server`, and
/// `TICKWHEEL_REQUIRE_REDIS` unset. Says so once per test binary, past the
/// test harness's capture.
pub(crate) fn skip() -> bool {
    if find_binary().is_some() || std::env::var_os("TICKWHEEL_REQUIRE_REDIS").is_some() {
        return false;
    }
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let exe = std::env::current_exe().ok();
        let name = exe
            .as_deref()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Cargo names a test binary `name-hash`.
        let name = name.rsplit_once('-').map_or(name.as_str(), |(n, _)| n);
        let line = format!(
            "\nNOTE: redis-server not found: the Redis tests in {name} did not run (they pass \
             without running). Install it (`sudo apt-get install redis-server`) or set \
             TICKWHEEL_REDIS_SERVER to run them; TICKWHEEL_REQUIRE_REDIS=1 makes this a failure.\n"
        );
        // Straight to the terminal: the test harness captures
        // print!/eprint!, not the stream itself.
        let _ = io::stderr().write_all(line.as_bytes());
    });
    true
}

/// The `redis-server` binary, if there is one (a `TICKWHEEL_REDIS_SERVER`
/// that names no file counts as one, so that `server_binary` reports it).
pub(crate) fn find_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TICKWHEEL_REDIS_SERVER") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default();
    let fallbacks = [PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")];
    on_path
        .into_iter()
        .chain(fallbacks)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
}

/// Finds the `redis-server` binary, or panics saying how to install one.
#[track_caller]
pub(super) fn server_binary() -> PathBuf {
    match try_server_binary() {
        Ok(path) => path,
        Err(why) => panic!("{why}"),
    }
}

/// Finds the `redis-server` binary, or says why there is none and how to
/// install one (for callers that report it rather than panic).
pub(super) fn try_server_binary() -> Result<PathBuf, String> {
    if let Some(path) = find_binary() {
        if path.is_file() {
            return Ok(path);
        }
        return Err(format!(
            "TICKWHEEL_REDIS_SERVER is set to {}, which is not a file",
            path.display()
        ));
    }
    Err(
        "redis-server not found: these tests start their own Redis server. \
         Install it (`sudo apt-get install redis-server` on Debian/Ubuntu; \
         `.ci/run` installs it), or set TICKWHEEL_REDIS_SERVER to its path."
            .into(),
    )
}
