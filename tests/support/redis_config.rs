//! How a test's `redis-server` is configured ([`Config`]) and the
//! `redis.conf` written from it. Part of `redis_server.rs`.

use super::alloc::borrow::ToOwned;
use super::alloc::string::{String, ToString};
use super::alloc::vec::Vec;
use std::fs;
use std::path::Path;

/// When the server fsyncs its append-only file (`appendfsync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fsync {
    /// After every write: nothing acknowledged is lost on SIGKILL.
    Always,
    /// Once a second, in the background.
    EverySec,
    /// When the OS decides.
    No,
}

impl Fsync {
    fn directive(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }
}

/// How a [`RedisServer`] is configured: AOF on with `appendfsync always`
/// unless told otherwise, no RDB snapshots, `noeviction`.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    appendonly: bool,
    appendfsync: Fsync,
    extra: Vec<(String, String)>,
    /// TLS only: the plain port is off, the server's port speaks TLS.
    pub(super) tls_only: bool,
    pub(super) sentinel: bool,
    pub(super) password: Option<String>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            appendonly: true,
            appendfsync: Fsync::Always,
            extra: Vec::new(),
            tls_only: false,
            sentinel: false,
            password: None,
        }
    }
}

impl Config {
    /// The defaults: `appendonly yes`, `appendfsync always`.
    pub(crate) fn new() -> Config {
        Config::default()
    }

    /// Sets `appendfsync`.
    pub(crate) fn appendfsync(mut self, policy: Fsync) -> Config {
        self.appendfsync = policy;
        self
    }

    /// Sets `appendonly` (on by default).
    pub(crate) fn appendonly(mut self, on: bool) -> Config {
        self.appendonly = on;
        self
    }

    /// Serves TLS only, on the server's port, with this certificate, key
    /// and CA (PEM files); `client_certs` makes clients present one signed
    /// by the CA. [`RedisServer::command`] speaks plain TCP, so it does not
    /// work on such a server.
    pub(crate) fn tls_only(
        mut self,
        cert: &Path,
        key: &Path,
        ca: &Path,
        client_certs: bool,
    ) -> Config {
        self.tls_only = true;
        self.extra.push(("tls-cert-file".to_owned(), quote(cert)));
        self.extra.push(("tls-key-file".to_owned(), quote(key)));
        self.extra.push(("tls-ca-cert-file".to_owned(), quote(ca)));
        let auth = if client_certs { "yes" } else { "no" };
        self.extra
            .push(("tls-auth-clients".to_owned(), auth.to_owned()));
        self
    }

    /// Runs the process as a sentinel (`--sentinel`); its `sentinel …`
    /// directives come through [`config`](Self::config).
    pub(crate) fn sentinel(mut self) -> Config {
        self.sentinel = true;
        self
    }

    /// Asks clients for `password` (`requirepass`), and gives it to the
    /// master this server replicates (`masterauth`);
    /// [`RedisServer::command`] logs in with it.
    pub(crate) fn password(mut self, password: &str) -> Config {
        self.password = Some(password.to_owned());
        self
    }

    /// Adds a directive, written as `key value` after the defaults (so it
    /// overrides them). `value` is written verbatim: quote it if needed.
    pub(crate) fn config(mut self, key: &str, value: &str) -> Config {
        self.extra.push((key.to_owned(), value.to_owned()));
        self
    }
}

/// Writes `redis.conf` into `dir`.
pub(super) fn write_config(dir: &Path, port: u16, config: &Config) {
    let mut text = String::new();
    let mut line = |key: &str, value: &str| {
        text.push_str(key);
        text.push(' ');
        text.push_str(value);
        text.push('\n');
    };
    line("bind", "127.0.0.1");
    if config.tls_only {
        line("port", "0");
        line("tls-port", &port.to_string());
    } else {
        line("port", &port.to_string());
    }
    line("daemonize", "no");
    line("dir", &quote(dir));
    line("logfile", &quote(&dir.join("redis.log")));
    line("save", "\"\"");
    line("appendonly", if config.appendonly { "yes" } else { "no" });
    line("appendfsync", config.appendfsync.directive());
    line("maxmemory-policy", "noeviction");
    if let Some(password) = &config.password {
        line("requirepass", password);
        line("masterauth", password);
    }
    for (key, value) in &config.extra {
        line(key, value);
    }
    let path = dir.join("redis.conf");
    fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// A path as a double-quoted config value.
fn quote(path: &Path) -> String {
    let raw = path.to_string_lossy();
    let mut out = String::with_capacity(raw.len() + 2);
    out.push('"');
    for c in raw.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}
