//! How results are printed: text for people, or one JSON object per line
//! (`--json`) for scripts; times as RFC 3339 in UTC, payloads escaped.

use core::time::Duration;
use std::io::Write;
use std::time::SystemTime;

use serde_json::{Map, Value};

/// Bytes of a payload shown in a listing's preview.
const PREVIEW: usize = 32;

/// Where results go, and in which form.
pub(crate) struct Out {
    pub(crate) json: bool,
}

impl Out {
    /// Prints one record: a JSON line, or `key=value` text on one line,
    /// where a field with no value (a last page's cursor) is left out.
    pub(crate) fn record(&self, fields: &[(&str, Value)]) {
        let mut line = self.line(fields);
        line.push('\n');
        write_out(&line);
    }

    /// One record's line. In text, control characters in a value (an id,
    /// a scheduler key) are escaped: raw, a newline split the record and
    /// an escape sequence reached the terminal.
    fn line(&self, fields: &[(&str, Value)]) -> String {
        if self.json {
            let map: Map<String, Value> = fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect();
            Value::Object(map).to_string()
        } else {
            fields
                .iter()
                .filter(|(k, v)| *k != "type" && !v.is_null())
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}={}", escape_controls(s)),
                    other => format!("{k}={other}"),
                })
                .collect::<Vec<_>>()
                .join("  ")
        }
    }
}

/// Writes `text` to stdout. A reader that went away (`| head`, a `jq`
/// that quit) ends the tool quietly, with exit 0, as the pipe's signal
/// ends other tools: it is not an error worth a message, and `watch`, which
/// once ignored it, polled Redis for ever with no one reading.
pub(crate) fn write_out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if written.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        std::process::exit(0);
    }
}

/// `text` with its control characters escaped (`\n`, `\u{1b}`), the rest
/// as it is.
fn escape_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `2026-05-01T12:00:00.123456Z`; times before the epoch print as it.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let since = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60,
        since.subsec_micros()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01
/// (Howard Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Bytes as text: printable ASCII as is, the rest as `\n`, `\xNN`.
pub(crate) fn escape(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}

/// The first bytes of a payload, escaped, with `…` if there is more.
pub(crate) fn preview(bytes: &[u8]) -> String {
    let mut text = escape(&bytes[..bytes.len().min(PREVIEW)]);
    if bytes.len() > PREVIEW {
        text.push('…');
    }
    text
}

/// Milliseconds, to the microsecond, as a JSON number.
pub(crate) fn millis(d: Duration) -> Value {
    Value::from(d.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_record_stays_one_line_whatever_its_values_hold() {
        let text = Out { json: false };
        let id = "ctl\x1b[31mred\nnewline\t";
        let line = text.line(&[("type", "job".into()), ("id", id.into()), ("n", 3.into())]);
        assert_eq!(line, "id=ctl\\u{1b}[31mred\\nnewline\\t  n=3");
        assert!(!line.chars().any(char::is_control));
        let json = Out { json: true }.line(&[("id", id.into())]);
        assert_eq!(serde_json::from_str::<Value>(&json).unwrap()["id"], id);
    }

    #[test]
    fn times_print_as_rfc3339_utc() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_795_000_000_123_456);
        assert_eq!(rfc3339(t), "2026-11-18T11:06:40.123456Z");
        assert_eq!(
            rfc3339(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000000Z"
        );
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000000Z");
    }

    #[test]
    fn payloads_are_escaped_and_cut() {
        assert_eq!(escape(b"a\n\xff\""), "a\\n\\xff\\\"");
        let long = [b'x'; 40];
        assert_eq!(preview(&long), format!("{}…", "x".repeat(32)));
    }
}
