//! Handing back jobs that nobody received, without spending an attempt
//! (`release.lua` checks each one's fence): those a claim took for a
//! fetch that had gone by the time they arrived, and those a claim given
//! up on leased when its stalled shard ran it late (`claimer.rs`).

use alloc::vec::Vec;
use core::time::Duration;

use super::counters::bump;
use super::keys::Token;
use super::lanes::MAX_CALLS;
use super::link::Io;
use super::lua::lua;
use super::ops::{array, int, keys_with};
use super::outcome::Delivery;

lua!(RELEASE, "release.lua", records);

/// Hands back the jobs that claims given up on leased (their shard ran
/// them late, a stalled shard's queued calls once it resumes): each claim
/// kept what it leased in its replay record, and `release.lua` reads it.
/// Nobody got those jobs, so no attempt is spent, and they need not wait
/// out a lease. Twice, the second a second later, in case a claim still
/// queued on another connection runs after the first pass.
pub(super) fn release_abandoned(io: &Io, part: usize, tokens: Vec<Token>) {
    if tokens.is_empty() {
        return;
    }
    let io = io.clone();
    tokio::spawn(async move {
        let keys = io.ctx.parts().get(part);
        let misfire = u8::from(io.ctx.options.on_missed != "fire");
        for pass in 0..2 {
            if pass == 1 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            for token in &tokens {
                let mut cmd = RELEASE.command(&keys_with(keys, &[keys.of_token("claim", token)]));
                cmd.arg(&keys.channel).arg(misfire);
                if let Ok(answer) = io.script(&RELEASE, &cmd).await {
                    let [back, dead, discarded, spread] = counts(answer);
                    let c = &io.ctx.counters;
                    bump(&c.released, back);
                    // The claim's own work, whose answer nobody read.
                    bump(&c.dead_lettered, dead);
                    bump(&c.discarded, discarded);
                    bump(&c.spread, spread);
                }
            }
        }
    });
}

/// Hands `jobs` back, each under its fence: a script call per partition.
pub(super) async fn release(io: &Io, jobs: &[Delivery]) {
    for (part, keys) in io.ctx.parts().iter().enumerate() {
        let mine: Vec<&Delivery> = jobs
            .iter()
            .filter(|job| io.ctx.parts().of(&job.id) == part)
            .collect();
        if mine.is_empty() {
            continue;
        }
        // At most `MAX_CALLS` a script: Lua unpacks at most about 8,000
        // values into a command (the jobs of five fetches gone at a close
        // once failed together, and stayed leased to nobody).
        for chunk in mine.chunks(MAX_CALLS) {
            let mut cmd = RELEASE.command(&keys.fixed);
            cmd.arg(&keys.channel)
                .arg(u8::from(io.ctx.options.on_missed != "fire"));
            for job in chunk {
                cmd.arg(&job.id).arg(job.fence);
                io.ctx.counters.held.settle(&job.id, job.fence);
            }
            if let Ok(answer) = io.script(&RELEASE, &cmd).await {
                bump(&io.ctx.counters.released, counts(answer)[0]);
            }
        }
    }
}

/// `release.lua`'s answer: jobs handed back, then a given-up claim's
/// dead-lettered, discarded and spread counts.
fn counts(answer: redis::Value) -> [u64; 4] {
    let mut out = [0; 4];
    if let Ok(items) = array(answer) {
        for (slot, item) in out.iter_mut().zip(&items) {
            *slot = int(item).unwrap_or(0).max(0) as u64;
        }
    }
    out
}
