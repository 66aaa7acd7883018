//! One peer's lateness run as the tables print it, from a Rust peer's
//! run or from BullMQ's JSON.

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};

use serde_json::Value;

use crate::bullmq::num;
use crate::common::Run;
use crate::stats::Usage;

/// One peer's lateness run, from Rust or from BullMQ's JSON.
pub(crate) struct Late {
    pub(crate) name: String,
    pub(crate) jobs: usize,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
    pub(crate) early: f64,
    pub(crate) lost: f64,
    pub(crate) duplicated: f64,
    pub(crate) scheduled_in: f64,
    pub(crate) lead: f64,
    pub(crate) usage: Usage,
    pub(crate) calls: BTreeMap<String, u64>,
    pub(crate) note: Option<String>,
}

impl Late {
    pub(crate) fn of_run(name: &str, run: &Run) -> Late {
        let s = &run.summary;
        Late {
            name: name.to_string(),
            jobs: s.jobs,
            p50: s.quantile_ms(0.5),
            p99: s.quantile_ms(0.99),
            max: s.quantile_ms(1.0),
            early: s.early as f64,
            lost: s.lost as f64,
            duplicated: s.duplicated as f64,
            scheduled_in: run.scheduled_in,
            lead: run.lead,
            usage: run.usage,
            calls: run.calls.clone(),
            note: run.note.clone(),
        }
    }

    pub(crate) fn of_json(j: &Value) -> Late {
        Late {
            name: bullmq_name(j),
            jobs: j["jobs"].as_u64().unwrap_or(0) as usize,
            p50: num(&j["p50_ms"]),
            p99: num(&j["p99_ms"]),
            max: num(&j["max_ms"]),
            early: num(&j["early"]),
            lost: num(&j["lost"]),
            duplicated: num(&j["duplicated"]),
            scheduled_in: num(&j["scheduling_ms"]) / 1000.0,
            lead: num(&j["lead_ms"]) / 1000.0,
            usage: Usage {
                elapsed: num(&j["measured_s"]),
                process: num(&j["process_cpu_s"]),
                redis: num(&j["redis_cpu_s"]),
            },
            calls: calls_of(&j["command_calls"]),
            note: None,
        }
    }

    pub(crate) fn commands(&self) -> f64 {
        self.calls.values().sum::<u64>() as f64 / self.jobs as f64
    }
}

pub(crate) fn bullmq_name(j: &Value) -> String {
    format!("BullMQ {}", j["version"].as_str().unwrap_or("?"))
}

pub(crate) fn calls_of(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, n)| (k.clone(), n.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default()
}
