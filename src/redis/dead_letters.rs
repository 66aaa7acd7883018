//! The dead letters of every partition, read and purged oldest first.
//!
//! Each partition's dead set is ordered by when its jobs died (server
//! clock), so the oldest `n` of the queue are among the oldest `n` of each
//! partition: both calls read those and merge them ([`oldest`]). A purge
//! then removes from each partition as many as the merge took from it.

use alloc::string::String;
use alloc::vec::Vec;

use redis::Value;

use super::claimer::score;
use super::keys::Token;
use super::lua::lua;
use super::ops::{array, bytes, int, keys_with, script_with_retry_flag, time_of};
use super::outcome::DeadLetter;
use super::pending::Pending;
use super::shared::Shared;
use super::{QueueError, MAX_PAGE};

lua!(DEAD, "dead.lua", records);
lua!(PURGE, "purge.lua", records);

/// The oldest `limit` of all partitions' lists (each oldest first, by
/// `at`), oldest first, with the partition each came from. Equal times
/// keep the partitions' order.
pub(super) fn oldest<T, K: Ord>(
    per_part: Vec<Vec<T>>,
    limit: usize,
    at: impl Fn(&T) -> K,
) -> Vec<(usize, T)> {
    let mut all: Vec<(usize, T)> = per_part
        .into_iter()
        .enumerate()
        .flat_map(|(part, items)| items.into_iter().map(move |item| (part, item)))
        .collect();
    all.sort_by_key(|(_, item)| at(item));
    all.truncate(limit);
    all
}

pub(super) fn dead_letters(
    s: &Shared,
    limit: usize,
) -> Result<Pending<Vec<DeadLetter>>, QueueError> {
    let limit = limit.min(MAX_PAGE);
    Ok(s.task(move |io, reply| async move {
        if limit == 0 {
            let _ = reply.send(Ok(Vec::new()));
            return;
        }
        let mut per_part = Vec::new();
        for part in io.ctx.parts().iter() {
            let mut cmd = DEAD.command(&part.fixed);
            cmd.arg(0).arg(limit - 1);
            match io.script(&DEAD, &cmd).await.and_then(read_dead) {
                Ok(some) => per_part.push(some),
                Err(err) => {
                    let _ = reply.send(Err(err));
                    return;
                }
            }
        }
        let all = oldest(per_part, limit, |dead| dead.at);
        let _ = reply.send(Ok(all.into_iter().map(|(_, dead)| dead).collect()));
    }))
}

/// `dead.lua`'s answer: id, payload, attempts, when, per dead letter.
fn read_dead(reply: Value) -> Result<Vec<DeadLetter>, QueueError> {
    let items = array(reply)?;
    Ok(items
        .chunks(4)
        .filter_map(|item| {
            let [id, payload, attempts, at] = item else {
                return None;
            };
            Some(DeadLetter {
                id: String::from_utf8_lossy(&bytes(id.clone())).into_owned(),
                payload: bytes(payload.clone()),
                attempts: int(attempts).unwrap_or(0).try_into().unwrap_or(u32::MAX),
                at: time_of(int(at).unwrap_or(0)),
            })
        })
        .collect())
}

/// A `ZRANGE … WITHSCORES` answer's scores: RESP2 lists member, score,
/// …; RESP3 lists [member, score] pairs.
fn scores(page: Vec<Value>) -> Vec<Option<i64>> {
    let flat: Vec<Value> = page
        .into_iter()
        .flat_map(|item| match item {
            Value::Array(pair) => pair,
            one => alloc::vec![one],
        })
        .collect();
    flat.chunks(2).map(|m| m.get(1).and_then(score)).collect()
}

pub(super) fn purge_dead(s: &Shared, limit: usize) -> Result<Pending<usize>, QueueError> {
    if limit == 0 || limit > MAX_PAGE {
        return Err(QueueError::Argument("a purge removes from 1 to 1,000 jobs"));
    }
    Ok(s.task(move |io, reply| async move {
        // The scores of each partition's oldest `limit` members: `purge.lua`
        // counts every member it drops, stale ones too, and so does this.
        let mut per_part = Vec::new();
        for part in io.ctx.parts().iter() {
            let mut range = redis::cmd("ZRANGE");
            range
                .arg(part.dead())
                .arg(0)
                .arg(limit - 1)
                .arg("WITHSCORES");
            match io.query(&range).await.and_then(array) {
                Ok(page) => per_part.push(scores(page)),
                Err(err) => {
                    let _ = reply.send(Err(err));
                    return;
                }
            }
        }
        let mut take = alloc::vec![0usize; per_part.len()];
        for (part, _) in oldest::<Option<i64>, _>(per_part, limit, |at| *at) {
            take[part] += 1;
        }
        let mut purged = 0;
        for (part, n) in take.into_iter().enumerate().filter(|&(_, n)| n > 0) {
            let keys = io.ctx.parts().get(part);
            let token = Token::new();
            let keys = keys_with(keys, &[keys.of_token("ans", &token)]);
            let answer = script_with_retry_flag(&io, &PURGE, |again| {
                let mut cmd = PURGE.command(&keys);
                cmd.arg(n).arg(token.bytes()).arg(u8::from(again));
                cmd.arg(io.ctx.options.answer_ttl_ms());
                cmd
            })
            .await
            .map(|v| int(&v).unwrap_or(0).max(0) as usize);
            match answer {
                Ok(n) => {
                    purged += n;
                    // They ended as cancels end: a retention later, the
                    // trimmer forgets them (it may sleep, nothing ended).
                    if n > 0 {
                        io.ctx.job_ended();
                    }
                }
                Err(err) => {
                    let _ = reply.send(if purged == 0 { Err(err) } else { Ok(purged) });
                    return;
                }
            }
        }
        let _ = reply.send(Ok(purged));
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn the_oldest_are_merged_across_partitions() {
        let per_part = vec![vec![5, 9], vec![], vec![1, 2, 8], vec![5]];
        let got = oldest(per_part, 4, |at| *at);
        assert_eq!(got, [(2, 1), (2, 2), (0, 5), (3, 5)]);
        assert!(oldest(vec![vec![1u8]], 0, |at| *at).is_empty());
    }
}
