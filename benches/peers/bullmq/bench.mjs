// BullMQ peer for tickwheel's Redis delayed-job queue benchmarks.
//
//   node bench.mjs --port <P> --workload <lateness|schedule|burst|idle|cancel>
//                  [--jobs N] [--window-ms W] [--concurrency C] [--in-flight F]
//                  [--lead-ms L] [--idle-secs S] [--prefix K] [--cancel M]
//                  [--seed X] [--timeout-secs T]
//
// Connects to a fresh redis-server on 127.0.0.1:<P> (FLUSHALL at start),
// runs one workload and prints exactly one line of JSON on stdout. All other
// output goes to stderr. Exit code 0 on success, non-zero (with a message on
// stderr) on failure. See README.md for the JSON schema.

import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

// Keep stdout for the single JSON line: anything a library logs goes to stderr.
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const require = createRequire(import.meta.url);
const BULLMQ_VERSION = require('bullmq/package.json').version;
const IOREDIS_VERSION = require('ioredis/package.json').version;

// ---------------------------------------------------------------------------
// Arguments

const WORKLOADS = ['lateness', 'schedule', 'burst', 'idle', 'cancel'];

function parseArgs(argv) {
  const opts = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument: ${a}`);
    const eq = a.indexOf('=');
    let key;
    let val;
    if (eq >= 0) {
      key = a.slice(2, eq);
      val = a.slice(eq + 1);
    } else {
      key = a.slice(2);
      val = argv[++i];
      if (val === undefined) throw new Error(`missing value for --${key}`);
    }
    opts[key] = val;
  }
  const known = [
    'port', 'workload', 'jobs', 'window-ms', 'concurrency', 'in-flight',
    'lead-ms', 'idle-secs', 'prefix', 'cancel', 'seed', 'timeout-secs',
  ];
  for (const k of Object.keys(opts)) {
    if (!known.includes(k)) throw new Error(`unknown option --${k}`);
  }
  const int = (k, def, min = 0) => {
    if (opts[k] === undefined) return def;
    const n = Number(opts[k]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${k} must be an integer >= ${min}`);
    return n;
  };
  if (opts.port === undefined) throw new Error('--port is required');
  if (!WORKLOADS.includes(opts.workload)) {
    throw new Error(`--workload must be one of ${WORKLOADS.join(', ')}`);
  }
  const workload = opts.workload;
  const cfg = {
    port: int('port', undefined, 1),
    workload,
    jobs: int('jobs', 100000, 1),
    windowMs: int('window-ms', 10000, 1),
    // The Worker's concurrency.
    concurrency: int('concurrency', 100, 1),
    // queue.add() calls in flight, one job each, wherever jobs are added
    // (but the cancel workload's untimed setup, which uses addBulk).
    inFlight: int('in-flight', 200, 1),
    // The first due time, after scheduling starts (lateness, burst); when
    // absent, a calibration run picks it.
    leadMs: opts['lead-ms'] === undefined ? null : int('lead-ms', null, 0),
    idleSecs: int('idle-secs', 10, 1),
    prefix: opts.prefix ?? 'bull',
    cancel: int('cancel', 10000, 0),
    seed: int('seed', 42, 0),
    timeoutSecs: int('timeout-secs', 600, 1),
  };
  if (cfg.prefix.length === 0 || cfg.prefix.includes(':')) {
    throw new Error('--prefix must be non-empty and contain no ":"');
  }
  return cfg;
}

// ---------------------------------------------------------------------------
// Clocks
//
// Intended due times and delivery times use the high-resolution wall clock
// performance.timeOrigin + performance.now() (sub-ms). BullMQ itself schedules
// with Date.now() (integer ms). We measure the offset between the two clocks
// precisely (at a Date.now() tick edge) so we can convert between them.

const nowMs = () => performance.timeOrigin + performance.now();

// Returns Date.now() - nowMs() measured at the instant Date.now() ticks, i.e.
// accurate to a few microseconds rather than to 1 ms.
function measureClockOffset() {
  const samples = [];
  for (let k = 0; k < 5; k++) {
    const d0 = Date.now();
    let d;
    let p;
    do {
      p = nowMs();
      d = Date.now();
    } while (d === d0);
    samples.push(d - p);
  }
  samples.sort((a, b) => a - b);
  return samples[2];
}

// ---------------------------------------------------------------------------
// Helpers

function log(...args) {
  console.error('[bullmq-bench]', ...args);
}

const round3 = x => (Number.isFinite(x) ? Math.round(x * 1000) / 1000 : x);

// Nearest-rank percentile of a sorted Float64Array.
function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

function latencyStats(values) {
  const s = Float64Array.from(values).sort();
  return {
    p50_ms: round3(percentile(s, 50)),
    p99_ms: round3(percentile(s, 99)),
    max_ms: round3(s.length ? s[s.length - 1] : null),
    min_ms: round3(s.length ? s[0] : null),
  };
}

// Small deterministic PRNG (mulberry32) for reproducible random choices.
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const jobId = i => `j${i}`; // BullMQ rejects integer custom ids.
const BULK_BATCH = 1000;
const FAR_DELAY_MS = 3600 * 1000;

// Options a performance-minded user would set on every job: completed jobs
// are deleted instead of piling up in the "completed" set.
const JOB_OPTS = { removeOnComplete: true };

// Worker options. BullMQ wakes a blocked worker exactly at the next delayed
// job's due time (the "marker" key + BZPOPMIN with a float timeout), so there
// is no documented option that makes delayed delivery more prompt; drainDelay
// only matters when nothing at all is scheduled. Defaults are kept and
// recorded.
function workerSettings(cfg) {
  return {
    concurrency: cfg.concurrency,
    workers: 1,
    drainDelay: 5, // BullMQ default (seconds)
    stalledInterval: 30000, // default
    lockDuration: 30000, // default
    maxStalledCount: 1, // default
    removeOnComplete: true, // job option
    add_in_flight: cfg.inFlight,
  };
}

function makeWorker(name, cfg, connection, processor) {
  const s = workerSettings(cfg);
  const worker = new Worker(name, processor, {
    connection,
    prefix: cfg.prefix,
    concurrency: s.concurrency,
    drainDelay: s.drainDelay,
    stalledInterval: s.stalledInterval,
    lockDuration: s.lockDuration,
    maxStalledCount: s.maxStalledCount,
    autorun: true,
  });
  worker.on('error', err => log('worker error:', err?.message ?? err));
  return worker;
}

// Adds `n` delayed jobs with addBulk in batches of BULK_BATCH, `inflight`
// batches in flight at a time (default 1). `dueOf(i)` is the intended due
// time (nowMs clock), or null for a fixed far delay. Returns elapsed ms.
async function addDelayedBulk(queue, n, { dueOf = null, clockOffset = 0, idOf = jobId, inflight = 1 } = {}) {
  const t0 = nowMs();
  let nextStart = 0;
  const lane = async () => {
    while (nextStart < n) {
      const start = nextStart;
      nextStart += BULK_BATCH;
      const end = Math.min(n, start + BULK_BATCH);
      const ts = Date.now(); // job.timestamp, passed explicitly
      const jobs = new Array(end - start);
      for (let i = start; i < end; i++) {
        let data;
        let delay;
        if (dueOf) {
          const due = dueOf(i);
          // BullMQ due = timestamp + delay (integer ms, Date.now() clock).
          // Round up so BullMQ never considers the job due before we intend.
          delay = Math.max(0, Math.ceil(due + clockOffset - ts));
          data = { id: i, due };
        } else {
          delay = FAR_DELAY_MS;
          data = { id: i };
        }
        jobs[i - start] = {
          name: 't',
          data,
          opts: { ...JOB_OPTS, jobId: idOf(i), timestamp: ts, delay },
        };
      }
      await queue.addBulk(jobs);
    }
  };
  await Promise.all(Array.from({ length: inflight }, lane));
  return nowMs() - t0;
}

// Adds `n` delayed jobs with one queue.add() per job, `inflight` calls in
// flight (`inflight` lanes, each adding its next job when its last add
// returns). Due times as for addDelayedBulk. Returns elapsed ms.
async function addDelayed(queue, n, { dueOf = null, clockOffset = 0, idOf = jobId, inflight = 200 } = {}) {
  const t0 = nowMs();
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const i = next++;
      const ts = Date.now(); // job.timestamp, passed explicitly
      let data;
      let delay;
      if (dueOf) {
        const due = dueOf(i);
        delay = Math.max(0, Math.ceil(due + clockOffset - ts));
        data = { id: i, due };
      } else {
        delay = FAR_DELAY_MS;
        data = { id: i };
      }
      await queue.add('t', data, { ...JOB_OPTS, jobId: idOf(i), timestamp: ts, delay });
    }
  };
  await Promise.all(Array.from({ length: Math.min(inflight, n) }, lane));
  return nowMs() - t0;
}

// CPU and Redis counters over a measured span: this process's CPU
// (process.cpuUsage, user + system), redis-server's (INFO cpu), and, with
// `reset`, Redis's commands by name (CONFIG RESETSTAT first, then INFO
// commandstats, which counts the commands inside Lua scripts; the RESETSTAT
// itself is taken off, and an INFO does not count itself).
async function costStart(ctx, { reset = false } = {}) {
  const cpu = parseInfo(await ctx.admin.info('cpu'));
  if (reset) await ctx.admin.config('RESETSTAT');
  return { t0: nowMs(), node: process.cpuUsage(), redis: redisCpu(cpu), reset };
}

async function costEnd(ctx, start) {
  const out = {};
  if (start.reset) {
    const calls = commandCalls(parseInfo(await ctx.admin.info('commandstats')));
    if (calls['config|resetstat']) calls['config|resetstat'] -= 1;
    if (!calls['config|resetstat']) delete calls['config|resetstat'];
    out.redis_commands = Object.values(calls).reduce((a, b) => a + b, 0);
    out.command_calls = calls;
  }
  const cpu = parseInfo(await ctx.admin.info('cpu'));
  const node = process.cpuUsage(start.node);
  out.measured_s = round3((nowMs() - start.t0) / 1000);
  out.process_cpu_s = round3((node.user + node.system) / 1e6);
  out.redis_cpu_s = round3(redisCpu(cpu) - start.redis);
  return out;
}

function redisCpu(info) {
  return Number(info.used_cpu_sys) + Number(info.used_cpu_user);
}

async function flushAll(admin) {
  await admin.flushall();
}

// ---------------------------------------------------------------------------
// Context

class Ctx {
  constructor(cfg) {
    this.cfg = cfg;
    this.connection = { host: '127.0.0.1', port: cfg.port };
    this.closables = [];
  }

  async open() {
    this.admin = new IORedis({
      host: '127.0.0.1',
      port: this.cfg.port,
      lazyConnect: true,
      maxRetriesPerRequest: 1,
      retryStrategy: times => (times > 20 ? null : 100),
    });
    this.admin.on('error', () => {});
    try {
      await this.admin.connect();
      await this.admin.ping();
    } catch (e) {
      throw new Error(`cannot connect to redis-server at 127.0.0.1:${this.cfg.port}: ${e?.message ?? e}`);
    }
    const info = await this.admin.info('server');
    this.redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? null;
    // Redis checks blocking-command timeouts (BullMQ's BZPOPMIN wait for the
    // next delayed job) only when its event loop wakes, i.e. at least every
    // 1000/hz ms when otherwise idle; record it since it bounds promptness.
    try {
      const hz = await this.admin.config('GET', 'hz');
      this.redisHz = Number(hz?.[1]) || null;
    } catch {
      this.redisHz = null;
    }
    await flushAll(this.admin);
  }

  track(x) {
    this.closables.push(x);
    return x;
  }

  queue(name) {
    const q = new Queue(name, { connection: this.connection, prefix: this.cfg.prefix });
    q.on('error', err => log('queue error:', err?.message ?? err));
    return this.track(q);
  }

  async closeAll() {
    // Workers first (they may still be fetching), then queues.
    const items = this.closables.splice(0).reverse();
    for (const x of items) {
      try {
        await x.close();
      } catch (e) {
        log('close error:', e?.message ?? e);
      }
    }
    if (this.admin) {
      try {
        await this.admin.quit();
      } catch {
        this.admin.disconnect();
      }
    }
  }
}

// Picks the time at which the first job is due: `minLeadMs` after the
// scheduling phase starts unless a calibration run (on a scratch queue) says
// scheduling N jobs takes longer, in which case the start is shifted.
async function chooseLead(ctx, n, minLeadMs) {
  if (ctx.cfg.leadMs !== null) {
    return { leadMs: ctx.cfg.leadMs, shifted: false, calibration: null };
  }
  const calibN = Math.min(n, 4000);
  const inflight = ctx.cfg.inFlight;
  const calibQ = new Queue('calibration', { connection: ctx.connection, prefix: ctx.cfg.prefix });
  calibQ.on('error', () => {});
  await calibQ.waitUntilReady();
  // One untimed warm-up batch (script loading, JIT), then the timed run.
  await addDelayed(calibQ, 1000, { idOf: i => `w${i}`, inflight });
  const ms = await addDelayed(calibQ, calibN, { idOf: i => `c${i}`, inflight });
  await calibQ.obliterate({ force: true });
  await calibQ.close();
  const rate = calibN / (ms / 1000);
  const predictedMs = (n / rate) * 1000;
  const needed = Math.ceil(predictedMs * 1.5 + 500);
  return {
    leadMs: Math.max(minLeadMs, needed),
    shifted: needed > minLeadMs,
    calibration: { jobs: calibN, add_per_sec: Math.round(rate), predicted_schedule_ms: Math.round(predictedMs) },
  };
}

// Waits until `isDone()` or the deadline; resolves with whether done.
async function waitFor(isDone, deadlineMs, pollMs = 20) {
  while (!isDone()) {
    if (nowMs() > deadlineMs) return false;
    await sleep(pollMs);
  }
  return true;
}

// ---------------------------------------------------------------------------
// Workloads

async function runLateness(ctx) {
  const { cfg } = ctx;
  const N = cfg.jobs;
  const W = cfg.windowMs;
  const name = 'lateness';
  const lead = await chooseLead(ctx, N, 2000);
  // Redis's counters and the CPU count from before the queue connects.
  const cost = await costStart(ctx, { reset: true });
  const queue = ctx.queue(name);
  await queue.waitUntilReady();

  const counts = new Uint32Array(N);
  const late = new Float64Array(N); // delivery - intended due
  const lateBull = new Float64Array(N); // delivery - (timestamp + delay)
  let delivered = 0;
  let deliveries = 0;
  let failed = 0;

  const clockOffsetStart = measureClockOffset();

  const worker = ctx.track(
    makeWorker(name, cfg, ctx.connection, async job => {
      const t = nowMs();
      const id = job.data.id;
      deliveries++;
      if (counts[id]++ === 0) {
        delivered++;
        late[id] = t - job.data.due;
        // BullMQ's own notion of the due time, converted to the nowMs clock.
        const bullDue = job.timestamp + (job.opts.delay ?? 0) - clockOffsetStart;
        lateBull[id] = t - bullDue;
      }
    }),
  );
  worker.on('failed', () => failed++);
  await worker.waitUntilReady();
  await sleep(200); // let the worker reach its blocking wait

  const schedStart = nowMs();
  const firstDue = schedStart + lead.leadMs;
  const step = W / N;
  const dueOf = i => firstDue + i * step;
  const schedMs = await addDelayed(queue, N, { dueOf, clockOffset: clockOffsetStart, inflight: cfg.inFlight });
  const schedEnd = nowMs();
  log(`scheduled ${N} in ${schedMs.toFixed(0)} ms; first due in ${(firstDue - schedEnd).toFixed(0)} ms`);

  const lastDue = firstDue + (N - 1) * step;
  const deadline = lastDue + 60000;
  const allIn = await waitFor(() => delivered >= N, Math.min(deadline, ctx.hardDeadline - 5000));
  if (allIn) await sleep(500); // grace to catch immediate duplicates
  const costs = await costEnd(ctx, cost);
  const lastDeliveryWait = nowMs() - lastDue;
  const clockOffsetEnd = measureClockOffset();

  const lat = [];
  const latB = [];
  let early = 0;
  let earlyOver1 = 0;
  let earlyBull = 0;
  for (let i = 0; i < N; i++) {
    if (counts[i] === 0) continue;
    lat.push(late[i]);
    latB.push(lateBull[i]);
    if (late[i] < 0) early++;
    if (late[i] < -1) earlyOver1++;
    if (lateBull[i] < 0) earlyBull++;
  }
  let duplicated = 0;
  for (let i = 0; i < N; i++) if (counts[i] > 1) duplicated += counts[i] - 1;

  const stats = latencyStats(lat);
  const statsBull = latencyStats(latB);
  return {
    workload: 'lateness',
    jobs: N,
    delivered,
    lost: N - delivered,
    duplicated,
    failed,
    early,
    early_over_1ms: earlyOver1,
    ...stats,
    earliness_reference: 'intended_due',
    lateness_vs_bullmq_due: { early: earlyBull, ...statsBull },
    window_ms: W,
    lead_ms: lead.leadMs,
    start_shifted: lead.shifted,
    scheduling_ms: round3(schedMs),
    scheduled_before_first_due: schedEnd <= firstDue,
    first_due_margin_ms: round3(firstDue - schedEnd),
    timed_out: !allIn,
    waited_after_last_due_ms: round3(lastDeliveryWait),
    clock_offset_ms: { start: round3(clockOffsetStart), end: round3(clockOffsetEnd) },
    calibration: lead.calibration,
    ...costs,
    settings: {
      ...workerSettings(cfg),
      cost_span: 'CONFIG RESETSTAT before the Queue and Worker connect, to 500 ms after the last first delivery',
      due_time: 'intended due = performance.timeOrigin+performance.now() based; BullMQ opts {timestamp: Date.now() when the job is added, delay: ceil(due - timestamp)} so BullMQ due (integer ms) >= intended due',
      bullmq_due: 'job.timestamp + job.opts.delay',
      delivery_time: 'processor entry',
    },
  };
}

async function runSchedule(ctx) {
  const { cfg } = ctx;
  const N = cfg.jobs;
  const F = cfg.inFlight;

  // One queue.add() per job, F in flight; CPU counted over the adds only.
  const queue = ctx.queue('schedule-add');
  await queue.waitUntilReady();
  const cost = await costStart(ctx);
  const addMs = await addDelayed(queue, N, { inflight: F });
  const costs = await costEnd(ctx, cost);
  const addCount = await queue.getDelayedCount();
  log(`add x${N} (${F} in flight): ${addMs.toFixed(0)} ms`);
  if (addCount !== N) {
    throw new Error(`delayed count mismatch: ${addCount}, expected ${N}`);
  }
  return {
    workload: 'schedule',
    jobs: N,
    add_per_sec: Math.round(N / (addMs / 1000)),
    add_ms: round3(addMs),
    ...costs,
    settings: {
      add_in_flight: F,
      delay_ms: FAR_DELAY_MS,
      removeOnComplete: true,
    },
  };
}

async function runBurst(ctx) {
  const { cfg } = ctx;
  const N = cfg.jobs;
  const name = 'burst';
  const queue = ctx.queue(name);
  await queue.waitUntilReady();

  const counts = new Uint32Array(N);
  const late = new Float64Array(N);
  let delivered = 0;
  let failed = 0;
  let firstDelivery = Infinity;
  let lastDelivery = -Infinity;

  const clockOffsetStart = measureClockOffset();
  const worker = ctx.track(
    makeWorker(name, cfg, ctx.connection, async job => {
      const t = nowMs();
      const id = job.data.id;
      if (t < firstDelivery) firstDelivery = t;
      if (counts[id]++ === 0) {
        delivered++;
        late[id] = t - job.data.due;
        lastDelivery = t;
      }
    }),
  );
  worker.on('failed', () => failed++);
  await worker.waitUntilReady();
  await sleep(200);

  const lead = await chooseLead(ctx, N, 3000);
  const schedStart = nowMs();
  const T = schedStart + lead.leadMs; // start of the due second
  const dueOf = i => T + (i * 1000) / N; // uniformly within [T, T+1000)
  const schedMs = await addDelayed(queue, N, { dueOf, clockOffset: clockOffsetStart, inflight: cfg.inFlight });
  const schedEnd = nowMs();
  log(`scheduled ${N} in ${schedMs.toFixed(0)} ms; due second starts in ${(T - schedEnd).toFixed(0)} ms`);

  const allIn = await waitFor(() => delivered >= N, Math.min(T + 1000 + 120000, ctx.hardDeadline - 5000), 5);
  if (allIn) await sleep(500);
  let duplicated = 0;
  for (let i = 0; i < N; i++) if (counts[i] > 1) duplicated += counts[i] - 1;
  const lat = [];
  let early = 0;
  for (let i = 0; i < N; i++) {
    if (counts[i] === 0) continue;
    lat.push(late[i]);
    if (late[i] < 0) early++;
  }
  const span = lastDelivery - T;

  return {
    workload: 'burst',
    jobs: N,
    delivered,
    delivered_per_sec: delivered > 0 ? Math.round(delivered / (span / 1000)) : 0,
    last_after_due_ms: delivered > 0 ? round3(lastDelivery - (T + 1000)) : null,
    first_delivery_after_due_start_ms: delivered > 0 ? round3(firstDelivery - T) : null,
    lost: N - delivered,
    duplicated,
    failed,
    early,
    lateness: latencyStats(lat),
    lead_ms: lead.leadMs,
    start_shifted: lead.shifted,
    scheduling_ms: round3(schedMs),
    scheduled_before_first_due: schedEnd <= T,
    timed_out: !allIn,
    calibration: lead.calibration,
    settings: {
      ...workerSettings(cfg),
      due_spread: 'uniform over [T, T+1000 ms)',
      rate_definition: 'delivered / (last delivery - T)',
      processor: 'no-op',
    },
  };
}

function parseInfo(text) {
  const out = {};
  for (const line of text.split(/\r?\n/)) {
    const m = /^([^:#]+):(.*)$/.exec(line);
    if (m) out[m[1]] = m[2];
  }
  return out;
}

function commandCalls(info) {
  const calls = {};
  for (const [k, v] of Object.entries(info)) {
    if (!k.startsWith('cmdstat_')) continue;
    const m = /calls=(\d+)/.exec(v);
    if (m) calls[k.slice(8)] = Number(m[1]);
  }
  return calls;
}

async function runIdle(ctx) {
  const { cfg } = ctx;
  const S = cfg.idleSecs;
  const queue = ctx.queue('idle');
  await queue.waitUntilReady();
  const worker = ctx.track(makeWorker('idle', cfg, ctx.connection, async () => {}));
  await worker.waitUntilReady();
  await sleep(2000); // settle

  // One INFO call per sample (stats + commandstats sections together).
  const before = parseInfo(await ctx.admin.info('stats', 'commandstats'));
  const t0 = nowMs();
  await sleep(S * 1000);
  const after = parseInfo(await ctx.admin.info('stats', 'commandstats'));
  const elapsed = (nowMs() - t0) / 1000;

  const total = Number(after.total_commands_processed) - Number(before.total_commands_processed) - 1;
  const cb = commandCalls(before);
  const ca = commandCalls(after);
  const breakdown = {};
  for (const [k, v] of Object.entries(ca)) {
    const d = v - (cb[k] ?? 0) - (k === 'info' ? 1 : 0);
    if (d > 0) breakdown[k] = d;
  }
  return {
    workload: 'idle',
    idle_secs: S,
    measured_secs: round3(elapsed),
    commands: total,
    commands_per_sec: round3(total / elapsed),
    command_calls: breakdown,
    settings: {
      ...workerSettings(cfg),
      note: 'one Queue + one running Worker, nothing pending; commands counted via INFO total_commands_processed, minus the first INFO',
    },
  };
}

async function runCancel(ctx) {
  const { cfg } = ctx;
  const N = cfg.jobs;
  const M = Math.min(cfg.cancel, Math.floor(N / 2));
  const F = cfg.inFlight;
  const queue = ctx.queue('cancel');
  await queue.waitUntilReady();

  // Setup, not timed: N pending jobs, added in bulk.
  const schedMs = await addDelayedBulk(queue, N);
  log(`scheduled ${N} in ${schedMs.toFixed(0)} ms`);

  // 2M distinct random indices (partial Fisher-Yates, seeded): the first M
  // are cancelled one at a time, the next M with F removes in flight.
  const rnd = mulberry32(cfg.seed);
  const idx = new Uint32Array(N);
  for (let i = 0; i < N; i++) idx[i] = i;
  for (let i = 0; i < 2 * M; i++) {
    const j = i + Math.floor(rnd() * (N - i));
    const t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }

  let removed = 0;
  const t0 = nowMs();
  for (let k = 0; k < M; k++) {
    if ((await queue.remove(jobId(idx[k]))) === 1) removed++;
  }
  const ms = nowMs() - t0;

  let next = M;
  const t1 = nowMs();
  const lane = async () => {
    while (next < 2 * M) {
      const k = next++;
      // Not `removed += await ...`, which would read `removed` before the
      // await and lose the other lanes' counts.
      if ((await queue.remove(jobId(idx[k]))) === 1) removed++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(F, M) }, lane));
  const parallelMs = nowMs() - t1;

  const remaining = await queue.getDelayedCount();
  if (removed !== 2 * M || remaining !== N - 2 * M) {
    throw new Error(`cancel mismatch: removed=${removed}/${2 * M}, delayed remaining=${remaining} (expected ${N - 2 * M})`);
  }
  return {
    workload: 'cancel',
    pending: N,
    cancelled: M,
    us_per_cancel: M > 0 ? round3((ms * 1000) / M) : null,
    cancel_ms: round3(ms),
    parallel_per_sec: M > 0 ? Math.round(M / (parallelMs / 1000)) : null,
    parallel_ms: round3(parallelMs),
    remaining_delayed: remaining,
    settings: {
      method: 'await queue.remove(jobId): M one at a time, then M others with F in flight',
      in_flight: F,
      selection: `uniform random distinct ids, seed ${cfg.seed}`,
      delay_ms: FAR_DELAY_MS,
    },
  };
}

// ---------------------------------------------------------------------------
// Main

async function main() {
  const cfg = parseArgs(process.argv.slice(2));
  const ctx = new Ctx(cfg);
  const started = nowMs();
  ctx.hardDeadline = started + cfg.timeoutSecs * 1000;
  const watchdog = setTimeout(() => {
    console.error(`[bullmq-bench] error: timed out after ${cfg.timeoutSecs} s`);
    process.exit(3);
  }, cfg.timeoutSecs * 1000);
  watchdog.unref();

  let result;
  try {
    await ctx.open();
    const run = { lateness: runLateness, schedule: runSchedule, burst: runBurst, idle: runIdle, cancel: runCancel }[cfg.workload];
    result = await run(ctx);
  } finally {
    await ctx.closeAll();
  }
  const out = {
    peer: 'bullmq',
    version: BULLMQ_VERSION,
    ioredis_version: IOREDIS_VERSION,
    node_version: process.versions.node,
    redis_version: ctx.redisVersion,
    redis_hz: ctx.redisHz,
    ...result,
    elapsed_s: round3((nowMs() - started) / 1000),
  };
  process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
}

main().catch(err => {
  console.error('[bullmq-bench] error:', err?.stack ?? err);
  process.exit(1);
});
