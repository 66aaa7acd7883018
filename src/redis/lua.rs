//! The queue's scripts: each is `scripts/common.lua` (the data model and
//! the helpers every script shares), then `scripts/records.lua` (parsed
//! records and batched writes) for the scripts that use it, then its own
//! file, run with `EVALSHA` and loaded on `NOSCRIPT`. Redis runs that whole
//! source on every call, so a script leaves out the layer it does not use.

use alloc::string::String;

use redis::{Cmd, ErrorKind, RedisResult, ServerErrorKind, Value};

use super::server::Conn;

/// A script, prepended with `common.lua` (and `records.lua`).
pub(super) struct Lua(redis::Script);

impl Lua {
    pub(super) fn new(body: &str, records: bool) -> Lua {
        let mut source = String::from(include_str!("scripts/common.lua"));
        if records {
            source.push_str(include_str!("scripts/records.lua"));
        }
        source.push_str(body);
        Lua(redis::Script::new(&source))
    }

    /// `EVALSHA` of this script with `keys`; the caller adds the arguments.
    pub(super) fn command<K: AsRef<str>>(&self, keys: &[K]) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.0.get_hash()).arg(keys.len());
        for key in keys {
            cmd.arg(key.as_ref());
        }
        cmd
    }

    /// Runs `cmd`; loads the script first if the server lost it.
    pub(super) async fn run(&self, mut conn: Conn, cmd: &Cmd) -> RedisResult<Value> {
        match cmd.query_async::<Value>(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.0.load_async(&mut conn).await?;
                cmd.query_async(&mut conn).await
            }
            other => other,
        }
    }

    /// Runs `cmd` and then `WAIT replicas timeout_ms` in one pipeline, so
    /// both go over the same connection (a `WAIT` counts the writes of its
    /// own connection); `touch` first if given. Answers the script's reply
    /// and how many replicas confirmed.
    pub(super) async fn run_and_wait(
        &self,
        mut conn: Conn,
        cmd: &Cmd,
        touch: Option<&Cmd>,
        replicas: u32,
        timeout_ms: u64,
    ) -> RedisResult<(Value, u32)> {
        let mut pipe = redis::pipe();
        if let Some(touch) = touch {
            pipe.add_command(touch.clone()).ignore();
        }
        pipe.add_command(cmd.clone());
        pipe.cmd("WAIT").arg(replicas).arg(timeout_ms);
        match pipe.query_async::<(Value, u32)>(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.0.load_async(&mut conn).await?;
                pipe.query_async(&mut conn).await
            }
            other => other,
        }
    }
}

/// Declares a script read from `scripts/`; `records` puts the records
/// layer in front of it.
macro_rules! lua {
    ($name:ident, $file:literal) => {
        $crate::redis::lua::lua!($name, $file, false);
    };
    ($name:ident, $file:literal, records) => {
        $crate::redis::lua::lua!($name, $file, true);
    };
    // The job scheduler calls: their shared helper first.
    ($name:ident, $file:literal, schedules) => {
        pub(super) static $name: std::sync::LazyLock<$crate::redis::lua::Lua> =
            std::sync::LazyLock::new(|| {
                $crate::redis::lua::Lua::new(
                    concat!(
                        include_str!("scripts/schedule_calls.lua"),
                        include_str!(concat!("scripts/", $file))
                    ),
                    false,
                )
            });
    };
    ($name:ident, $file:literal, $records:expr) => {
        pub(super) static $name: std::sync::LazyLock<$crate::redis::lua::Lua> =
            std::sync::LazyLock::new(|| {
                $crate::redis::lua::Lua::new(include_str!(concat!("scripts/", $file)), $records)
            });
    };
}
pub(super) use lua;
