//! The Redis queue's tests, each on real `redis-server`s it starts itself
//! (without one they say plainly that they did not run): the queue's calls,
//! connecting, retries and fencing, faults with real SIGKILLs, Cluster
//! partitions, replicas, job schedulers and the admin tool. One binary, so
//! the suite builds and links once.

extern crate alloc;

mod admin_cli;
mod admin_edges;
mod admin_journal;
mod admin_tool;
mod admin_watch_count;
mod api_audit;
mod async_api;
mod async_drops;
mod async_runtime;
mod basics;
#[path = "../support/children.rs"]
mod children;
mod cluster;
mod cluster_outage;
mod cluster_stall;
mod connect;
mod faults;
mod fencing;
mod fetch_promises;
mod harness;
mod late_retries;
mod listing;
mod ops_audit;
mod partitions;
mod payloads;
mod priority;
#[path = "../support/queues.rs"]
mod queues;
#[path = "../support/redis_cluster.rs"]
mod redis_cluster;
#[path = "../support/redis_proxy.rs"]
mod redis_proxy;
#[path = "../support/redis_sentinel.rs"]
mod redis_sentinel;
#[path = "../support/redis_server.rs"]
mod redis_server;
mod replicas;
mod retries;
mod schedule_retries;
mod schedules;
mod schedules_cron_cancel;
mod schedules_edges;
mod schedules_misfire;
#[path = "../support/scratch.rs"]
mod scratch;
mod sentinel;
#[path = "../support/tls_certs.rs"]
mod tls_certs;
