//! Reading journal bytes back into records (the format is in `format.rs`):
//! [`decode_all`] returns every record that checks out, and the stretches
//! it skipped as [`Damage`].

use alloc::string::String;
use alloc::vec::Vec;
use core::time::Duration;
use std::time::SystemTime;

use super::crc32::crc32_update;
use super::format::{Record, ESCAPE, FRAME, MARKER, MAX_BODY, STUFFED};

/// Appends `n` bytes read from `bytes[at..]` to `out`, undoing the
/// escaping; returns where reading stopped, or `None` if the bytes end
/// first or an [`ESCAPE`] is not followed by [`STUFFED`].
fn unescape(bytes: &[u8], mut at: usize, mut n: usize, out: &mut Vec<u8>) -> Option<usize> {
    while n > 0 {
        let rest = bytes.get(at..)?;
        let chunk = rest.get(..n.min(rest.len()))?;
        if chunk.is_empty() {
            return None;
        }
        match chunk.iter().position(|&b| b == ESCAPE) {
            None => {
                out.extend_from_slice(chunk);
                at += chunk.len();
                n -= chunk.len();
            }
            Some(p) => {
                out.extend_from_slice(&chunk[..=p]);
                if *bytes.get(at + p + 1)? != STUFFED {
                    return None;
                }
                at += p + 2;
                n -= p + 1;
            }
        }
    }
    Some(at)
}

fn decode_time(bytes: &[u8]) -> Option<SystemTime> {
    let secs = i64::from_le_bytes(bytes.get(..8)?.try_into().ok()?);
    let nanos = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?);
    if nanos >= 1_000_000_000 {
        return None;
    }
    let base = if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))?
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))?
    };
    base.checked_add(Duration::from_nanos(u64::from(nanos)))
}

/// The UTF-8 text at `at` in `bytes` (a `u16` LE length, then the text),
/// and where it ends.
fn text_at(bytes: &[u8], at: usize) -> Option<(String, usize)> {
    let len = u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?) as usize;
    let text = bytes.get(at + 2..at + 2 + len)?;
    Some((String::from_utf8(text.to_vec()).ok()?, at + 2 + len))
}

/// Decodes a record body whose CRC has checked out.
fn decode_body(body: &[u8]) -> Option<Record> {
    let (&kind, rest) = body.split_first()?;
    let id = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    let rest = &rest[8..];
    Some(match kind {
        1 => Record::Schedule {
            id,
            due: decode_time(rest)?,
            payload: rest.get(12..)?.to_vec(),
        },
        6 => {
            let (key, at) = text_at(rest, 12)?;
            Record::Keyed {
                id,
                due: decode_time(rest)?,
                key,
                payload: rest.get(at..)?.to_vec(),
            }
        }
        7 => {
            let (key, at) = text_at(rest, 12)?;
            let (timetable, at) = text_at(rest, at)?;
            Record::Recurring {
                id,
                due: decode_time(rest)?,
                key,
                timetable,
                payload: rest.get(at..)?.to_vec(),
            }
        }
        2 if rest.is_empty() => Record::Cancel { id },
        3 if rest.len() == 12 => Record::Reset {
            id,
            due: decode_time(rest)?,
        },
        4 if rest.is_empty() => Record::Done { id },
        5 if rest.is_empty() => Record::Watermark { id },
        _ => return None,
    })
}

/// A stretch of the file that did not decode and was skipped.
///
/// ```
/// use std::io::Write;
/// use tickwheel::persist::{Damage, DurableTimer, MisfirePolicy, SyncPolicy};
///
/// # let dir = std::env::temp_dir().join(format!("tickwheel-damage-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let path = dir.join("jobs.journal");
/// let open = || DurableTimer::<u64>::open(&path, SyncPolicy::Always, &MisfirePolicy::default(), |_| {});
/// drop(open()?);
/// // A write torn by a crash: bytes at the end that are no record.
/// let len = std::fs::metadata(&path)?.len();
/// std::fs::OpenOptions::new().append(true).open(&path)?.write_all(&[0xff; 5])?;
/// let (_jobs, recovery) = open()?;
/// assert_eq!(recovery.damage, [Damage { offset: len, len: 5, at_end: true }]);
/// # drop(_jobs);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damage {
    /// Byte offset in the file where it starts.
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
    /// `true` if it runs to the end of the file: a torn last write.
    pub at_end: bool,
}

/// Everything readable in a journal's bytes (after the header), and the
/// damage skipped. Never fails and never panics: any bytes decode to
/// some records and some damage.
pub(super) fn decode_all(
    bytes: &[u8],
    base_offset: u64,
    version: u32,
) -> (Vec<Record>, Vec<Damage>) {
    let frame_at = if version == 1 { frame_at_v1 } else { frame_at };
    let mut records = Vec::new();
    let mut damage: Vec<Damage> = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        match frame_at(bytes, at) {
            Some((record, next)) => {
                records.push(record);
                at = next;
            }
            None => {
                // Skip to the next valid record, or the end.
                let start = at;
                at += 1;
                while at < bytes.len() && frame_at(bytes, at).is_none() {
                    at += 1;
                }
                damage.push(Damage {
                    offset: base_offset + start as u64,
                    len: (at - start) as u64,
                    at_end: at == bytes.len(),
                });
            }
        }
    }
    (records, damage)
}

/// The record framed at `at`, and where the next one starts.
fn frame_at(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
    if bytes.get(at..at + 4)? != MARKER {
        return None;
    }
    let mut head = Vec::with_capacity(8);
    let at = unescape(bytes, at + 4, 8, &mut head)?;
    let len = u32::from_le_bytes(head[..4].try_into().ok()?) as usize;
    if len > MAX_BODY {
        return None;
    }
    let crc = u32::from_le_bytes(head[4..8].try_into().ok()?);
    let mut body = Vec::new();
    let next = unescape(bytes, at, len, &mut body)?;
    if !crc32_update(crc32_update(!0, &head[..4]), &body) != crc {
        return None;
    }
    Some((decode_body(&body)?, next))
}

/// A version 1 record at `at`: no escaping, the CRC of the body only.
fn frame_at_v1(bytes: &[u8], at: usize) -> Option<(Record, usize)> {
    let frame = bytes.get(at..at + FRAME)?;
    if frame[..4] != MARKER {
        return None;
    }
    let len = u32::from_le_bytes(frame[4..8].try_into().ok()?) as usize;
    if len > MAX_BODY {
        return None;
    }
    let crc = u32::from_le_bytes(frame[8..12].try_into().ok()?);
    let body = bytes.get(at + FRAME..at + FRAME + len)?;
    if !crc32_update(!0, body) != crc {
        return None;
    }
    Some((decode_body(body)?, at + FRAME + len))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::persist::format::{encode, VERSION};
    use alloc::vec;

    fn sample() -> Vec<Record> {
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123);
        vec![
            Record::Schedule {
                id: 1,
                due: t,
                payload: b"order 17".to_vec(),
            },
            Record::Reset {
                id: 1,
                due: t + Duration::from_secs(5),
            },
            Record::Cancel { id: 2 },
            Record::Done { id: 1 },
            Record::Watermark { id: 9 },
            Record::Keyed {
                id: 4,
                due: t,
                key: String::from("order 1017"),
                payload: b"close".to_vec(),
            },
            Record::Recurring {
                id: 5,
                due: t,
                key: String::from("nightly \u{a5}"),
                timetable: String::from("once\ncron\n0 0 2 * * *\nEurope/Paris"),
                payload: vec![0xA5, 0x7E, 0x1D, 0xC3],
            },
            Record::Schedule {
                id: 3,
                due: SystemTime::UNIX_EPOCH - Duration::new(3, 5),
                payload: Vec::new(),
            },
        ]
    }

    fn bytes(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        for record in records {
            encode(record, &mut out);
        }
        out
    }

    #[test]
    fn records_round_trip() {
        let records = sample();
        assert_eq!(
            decode_all(&bytes(&records), 0, VERSION),
            (records, Vec::new())
        );
    }

    #[test]
    fn a_torn_tail_loses_only_the_last_record() {
        let records = sample();
        let all = bytes(&records);
        for cut in 1..20 {
            let (got, damage) = decode_all(&all[..all.len() - cut], 8, VERSION);
            assert_eq!(got, records[..records.len() - 1], "cut {cut}");
            assert_eq!(damage.len(), 1);
            assert!(damage[0].at_end);
        }
    }

    #[test]
    fn a_flipped_byte_loses_only_its_record() {
        let records = sample();
        let all = bytes(&records);
        for at in 0..all.len() {
            let mut bad = all.clone();
            bad[at] ^= 0x40;
            let (got, damage) = decode_all(&bad, 0, VERSION);
            assert!(!damage.is_empty(), "flip at {at} went unnoticed");
            assert!(
                got.len() >= records.len() - 1,
                "flip at {at} lost {:?}",
                got
            );
            assert!(
                got.iter().all(|r| records.contains(r)),
                "flip at {at} invented a record"
            );
        }
    }

    /// A version 1 record, as the crate wrote them before escaping.
    fn v1(record: &Record) -> Vec<u8> {
        let mut v2 = Vec::new();
        encode(record, &mut v2);
        // Undo the escaping to get at the body, then frame it the old way.
        let mut logical = Vec::new();
        unescape(
            &v2,
            4,
            v2.len() - 4 - v2[4..].iter().filter(|&&b| b == ESCAPE).count(),
            &mut logical,
        )
        .unwrap();
        let body = &logical[8..];
        let mut out = MARKER.to_vec();
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&(!crc32_update(!0, body)).to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn version_1_files_still_read() {
        let records = sample();
        let old: Vec<u8> = records.iter().flat_map(v1).collect();
        assert_eq!(decode_all(&old, 8, 1), (records, Vec::new()));
    }

    #[test]
    fn escaped_bytes_round_trip() {
        let payload: Vec<u8> = (0..=255u8)
            .chain([0xA5, 0x7E, 0x1D, 0xC3, 0xA5, 0xA5, 0x00])
            .collect();
        let records = vec![
            Record::Schedule {
                id: 0xA5A5_A5A5_A5A5_A5A5,
                due: SystemTime::UNIX_EPOCH + Duration::new(0xA5A5, 0xA5),
                payload: payload.clone(),
            },
            Record::Cancel { id: 0xA5 },
        ];
        let all = bytes(&records);
        // The marker's first two bytes appear only where records start.
        let starts = all.windows(2).filter(|w| w == &[0xA5, 0x7E]).count();
        assert_eq!(starts, records.len());
        assert_eq!(decode_all(&all, 0, VERSION), (records, Vec::new()));
    }

    /// Damage in front of a payload made of records (a cancel of job 1 and
    /// a schedule of job 99, framed exactly as the journal frames them,
    /// and the same in version 1) must never make them records: before
    /// escaping, a scan after the damage landed inside the payload.
    #[test]
    fn a_payload_built_of_records_is_never_read_as_records() {
        let victim = Record::Schedule {
            id: 1,
            due: SystemTime::UNIX_EPOCH + Duration::from_secs(5),
            payload: b"order 1".to_vec(),
        };
        let forged = [
            Record::Cancel { id: 1 },
            Record::Schedule {
                id: 99,
                due: SystemTime::UNIX_EPOCH,
                payload: b"nobody scheduled me".to_vec(),
            },
        ];
        let mut payload = bytes(&forged);
        payload.extend(forged.iter().flat_map(v1));
        let carrier = Record::Schedule {
            id: 2,
            due: SystemTime::UNIX_EPOCH + Duration::from_secs(9),
            payload,
        };
        let mut all = bytes(core::slice::from_ref(&victim));
        let carrier_at = all.len();
        encode(&carrier, &mut all);
        let tail = Record::Done { id: 3 };
        encode(&tail, &mut all);
        // Every byte of the carrier's frame and the first of its body.
        for at in carrier_at..carrier_at + FRAME + 2 {
            for flip in [0x01, 0x40, 0xFF] {
                let mut bad = all.clone();
                bad[at] ^= flip;
                let (got, damage) = decode_all(&bad, 0, VERSION);
                assert!(!damage.is_empty(), "flip {flip:#x} at {at} went unnoticed");
                assert!(
                    got.iter().all(|r| *r == victim || *r == tail),
                    "flip {flip:#x} at {at} read the payload as records: {got:?}"
                );
                assert_eq!(got.first(), Some(&victim));
                assert_eq!(got.last(), Some(&tail));
            }
        }
    }
}
