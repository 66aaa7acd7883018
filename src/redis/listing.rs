//! Listing a queue's jobs a page at a time ([`Queue::pending`],
//! [`Queue::in_flight`], [`Queue::dead`]): each page reads at most its size
//! of members from where the last one ended (`scripts/list.lua`), so a
//! page costs O(log n + page) however many jobs wait.
//!
//! [`Queue::pending`]: super::Queue::pending
//! [`Queue::in_flight`]: super::Queue::in_flight
//! [`Queue::dead`]: super::Queue::dead

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::{Bound, RangeBounds};
use core::str::FromStr;
use std::time::SystemTime;

use super::lua::lua;
use super::ops::{array, bytes, int, time_of};
use super::pending::Pending;
use super::shared::Shared;
use super::{QueueError, MAX_PAGE};

lua!(LIST, "list.lua");

/// A job as a listing shows it.
///
/// ```
/// fn show(job: &tickwheel::redis::Listed) -> String {
///     format!("{} due {:?}, {} deliveries", job.id, job.due, job.attempts)
/// }
/// # let _ = show;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listed {
    /// The job's id.
    pub id: String,
    /// Its payload.
    pub payload: Vec<u8>,
    /// When it is (or was) due.
    pub due: SystemTime,
    /// Deliveries it has had.
    pub attempts: u32,
    /// What the listing is ordered by: the due time of a waiting job, the
    /// lease's end of one in flight, when a dead one was dead-lettered
    /// (server clock).
    pub at: SystemTime,
}

/// A page of a listing, and where the next one starts.
///
/// ```
/// fn ids(page: &tickwheel::redis::Page) -> Vec<&str> {
///     page.jobs.iter().map(|job| job.id.as_str()).collect()
/// }
/// # let _ = ids;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Page {
    /// The jobs, in the listing's order. A page may hold fewer jobs than
    /// asked for (or none) and still not be the last: the jobs of another
    /// kind it read past are not shown.
    pub jobs: Vec<Listed>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

/// Where a listing goes on: the place after the last job a page read.
/// Jobs added before it later are not seen; jobs removed do not shift the
/// pages (a cursor names a place, not an offset). It prints as text and
/// parses back, for tools that hand it between calls. A queue of several
/// partitions is listed partition after partition (the order holds within
/// each), and its cursors begin with the partition: `<k>:`.
///
/// ```
/// let cursor: tickwheel::redis::Cursor = "1795000000000000-00000000000000016f7264657273".parse()?;
/// assert_eq!(cursor.to_string().parse::<tickwheel::redis::Cursor>()?, cursor);
/// # Ok::<(), tickwheel::redis::QueueError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Cursor {
    /// The partition the listing is in.
    part: u16,
    /// The score (server microseconds) of the last member read.
    score: u64,
    /// That member, as stored; empty: from the partition's start.
    member: Vec<u8>,
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.part > 0 {
            write!(f, "{}:", self.part)?;
        }
        write!(f, "{}-", self.score)?;
        self.member.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl FromStr for Cursor {
    type Err = QueueError;

    fn from_str(text: &str) -> Result<Cursor, QueueError> {
        const BAD: QueueError =
            QueueError::Argument("a cursor is `[<partition>:]<score>-<hex member>`");
        let (part, text) = match text.split_once(':') {
            Some((part, rest)) => (part.parse().map_err(|_| BAD)?, rest),
            None => (0, text),
        };
        let (score, hex) = text.split_once('-').ok_or(BAD)?;
        let score = score.parse().map_err(|_| BAD)?;
        // Empty only where a partition starts.
        if hex.len() % 2 != 0 || (hex.is_empty() && part == 0) {
            return Err(BAD);
        }
        let member = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2).ok_or(BAD)?, 16).map_err(|_| BAD))
            .collect::<Result<Vec<u8>, QueueError>>()?;
        Ok(Cursor {
            part,
            score,
            member,
        })
    }
}

/// Which jobs a listing shows.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Waiting,
    InFlight,
    Dead,
}

/// A time bound as whole microseconds (rounded so that the bound keeps
/// its meaning: up for a lower bound, down for an upper one). A bound
/// past the latest due time works as one at it would (no job is later),
/// whichever side it is on; only one before the epoch is refused.
fn micros_of(t: SystemTime, up: bool) -> Result<u64, QueueError> {
    let since = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_err(|_| QueueError::DueOutOfRange)?;
    let part = u128::from(since.subsec_nanos() % 1_000 != 0);
    let micros = since.as_micros() + if up { part } else { 0 };
    Ok(u64::try_from(micros).unwrap_or(u64::MAX))
}

/// One page of `kind`, in `range` (of due times: waiting jobs only).
pub(super) fn page(
    s: &Shared,
    kind: Kind,
    range: (Bound<SystemTime>, Bound<SystemTime>),
    limit: usize,
    after: Option<&Cursor>,
) -> Result<Pending<Page>, QueueError> {
    if limit == 0 || limit > MAX_PAGE {
        return Err(QueueError::Argument("a page holds from 1 to 1,000 jobs"));
    }
    // ZCOUNT's upper bound for the members below the range.
    let below = match range.0 {
        Bound::Unbounded => String::new(),
        Bound::Included(t) => format!("({}", micros_of(t, true)?),
        Bound::Excluded(t) => format!("{}", micros_of(t, false)?),
    };
    let (top, top_in) = match range.1 {
        Bound::Unbounded => (String::new(), true),
        Bound::Included(t) => (format!("{}", micros_of(t, false)?), true),
        Bound::Excluded(t) => (format!("{}", micros_of(t, true)?), false),
    };
    let what = match kind {
        Kind::Waiting => "w",
        Kind::InFlight => "l",
        Kind::Dead => "x",
    };
    let (mut part, mut score, mut member) = after.map_or((0, String::new(), Vec::new()), |c| {
        let score = if c.member.is_empty() {
            String::new()
        } else {
            format!("{}", c.score)
        };
        (usize::from(c.part), score, c.member.clone())
    });
    if part >= s.ctx.parts().len() {
        // From a queue with more partitions: it names none of this one's
        // (it once answered an empty last page, as if the listing ended).
        return Err(QueueError::Argument(
            "the cursor names a partition this queue does not have",
        ));
    }
    Ok(s.task(move |io, reply| async move {
        // Partition after partition, until the page is full or the last
        // partition ends.
        let mut jobs = Vec::new();
        let partitions = io.ctx.parts().len();
        let next = loop {
            let Some(keys) = (part < partitions).then(|| io.ctx.parts().get(part)) else {
                break None;
            };
            let mut cmd = LIST.command(&keys.fixed);
            cmd.arg(what)
                .arg(&below)
                .arg(&top)
                .arg(if top_in { "1" } else { "0" })
                .arg(limit - jobs.len())
                .arg(&score)
                .arg(&member);
            let page = match io.script(&LIST, &cmd).await.and_then(read_page) {
                Ok(page) => page,
                Err(err) => {
                    let _ = reply.send(Err(err));
                    return;
                }
            };
            jobs.extend(page.jobs);
            if let Some(mut next) = page.next {
                next.part = part as u16;
                break Some(next);
            }
            part += 1;
            (score, member) = (String::new(), Vec::new());
            if jobs.len() == limit && part < partitions {
                break Some(Cursor {
                    part: part as u16,
                    score: 0,
                    member: Vec::new(),
                });
            }
        };
        let _ = reply.send(Ok(Page { jobs, next }));
    }))
}

fn read_page(reply: redis::Value) -> Result<Page, QueueError> {
    let mut items = array(reply)?.into_iter();
    let score = items.next().map(bytes).unwrap_or_default();
    let member = items.next().map(bytes).unwrap_or_default();
    let next = if member.is_empty() {
        None
    } else {
        let score = core::str::from_utf8(&score)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                QueueError::Server(String::from("a listing's cursor is not a number"))
            })?;
        Some(Cursor {
            part: 0,
            score,
            member,
        })
    };
    let mut jobs = Vec::new();
    while let (Some(id), Some(payload), Some(attempts), Some(due), Some(at)) = (
        items.next(),
        items.next(),
        items.next(),
        items.next(),
        items.next(),
    ) {
        jobs.push(Listed {
            id: String::from_utf8_lossy(&bytes(id)).into_owned(),
            payload: bytes(payload),
            attempts: int(&attempts).unwrap_or(0).try_into().unwrap_or(u32::MAX),
            due: time_of(int(&due).unwrap_or(0)),
            at: time_of(int(&at).unwrap_or(0)),
        });
    }
    Ok(Page { jobs, next })
}

/// The bounds of a range, owned.
pub(super) fn bounds(
    range: &impl RangeBounds<SystemTime>,
) -> (Bound<SystemTime>, Bound<SystemTime>) {
    (range.start_bound().cloned(), range.end_bound().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    #[test]
    fn a_cursor_prints_and_parses_back() {
        let cursor = Cursor {
            part: 0,
            score: 1_795_000_000_000_123,
            member: vec![0, 0, 0, 0, 0, 0, 0, 7, b'o', b'-', 0xff],
        };
        let text = cursor.to_string();
        assert_eq!(text, "1795000000000123-00000000000000076f2dff");
        assert_eq!(text.parse::<Cursor>().unwrap(), cursor);
        let third = Cursor {
            part: 3,
            ..cursor.clone()
        };
        assert_eq!(
            third.to_string(),
            "3:1795000000000123-00000000000000076f2dff"
        );
        assert_eq!(third.to_string().parse::<Cursor>().unwrap(), third);
        let start = Cursor {
            part: 2,
            score: 0,
            member: vec![],
        };
        assert_eq!(start.to_string(), "2:0-");
        assert_eq!("2:0-".parse::<Cursor>().unwrap(), start);
        for bad in [
            "", "12", "12-", "x-00", "12-0", "12-zz", "-00", "x:1-00", "1:2",
        ] {
            assert!(bad.parse::<Cursor>().is_err(), "{bad:?} parsed");
        }
    }
}
