-- Shared head of every script (the client prepends it). KEYS, in order:
-- 1 due: ZSET member -> when something must next happen to the job, in
--   microseconds of the server's clock: its due time while it waits, its
--   lease deadline while a consumer holds it. A member is the job's
--   16-hex-digit sequence number then its id, so equal scores come out
--   first in, first out.
-- 2 jobs: HASH id -> the job's record (below), live or ended.
-- 3 dead: ZSET member -> when the job was dead-lettered.
-- 4 ends: LIST of pairs (when the job ended, in microseconds as text; its
--   id), oldest first, for every job that ended (acked, cancelled,
--   discarded): the retention trimmer pops the pairs older than the
--   retention and deletes their records. A list, not a sorted set: scripts
--   run one at a time and read the clock, so appending keeps it in time
--   order, and an append costs a fraction of a sorted insert.
-- 5 seq: the sequence counter.
-- 6 spread: HASH start, window, total, done: the misfire policy's spread.
-- Later KEYS are each script's own (a claim's replay record, answers).
--
-- A record is a 41-byte header, then the payload verbatim:
--   state   1 byte: w waiting, l leased, x dead-lettered; ended: a acked,
--           c cancelled, g discarded by the misfire policy
--   fence   4 bytes, big-endian: deliveries ever made; never goes back
--           (requeue included), so a delivery is known by (id, fence)
--   attempt 4 bytes: deliveries since it was scheduled or requeued
--   due     8 bytes, a double: when it was due, whole microseconds
--   seq     8 bytes, big-endian: the member is seq .. id
--   made    8 bytes: the request token of the schedule that created it
--   last    8 bytes: the request token of the last call that changed it
-- (`struct`, a C library every Redis has, packs and unpacks it in one
-- call; the hot loops of schedule and cancel cut fields out by these byte
-- offsets instead: state 1, fence 2-5, attempt 6-9, due 10-17, seq 18-25,
-- made 26-33, last 34-41.) A retried call carries the token of its first attempt, so it can
-- tell its own earlier effect from anyone else's and answer the same.
-- Scores and due times are passed to Redis as Lua numbers: whole numbers
-- below 2^53, exact in a double and in Redis's conversion.

local HEADER = '>c1I4I4dc8c8c8'

-- A whole number as text, for concatenation (Lua's own drops digits).
local function num(x)
  return string.format('%.0f', x)
end
local HEADER_LEN = 41

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function parse(rec)
  local s, fence, attempt, due, seq, made, last = struct.unpack(HEADER, rec)
  return { s = s, fence = fence, attempt = attempt, due = due, seq = seq,
    made = made, last = last, rec = rec }
end

-- The payload of a parsed record (copied only when asked for).
local function payload(r)
  if r.payload == nil then r.payload = string.sub(r.rec, HEADER_LEN + 1) end
  return r.payload
end

local function pack(r)
  return struct.pack(HEADER, r.s, r.fence, r.attempt, r.due, r.seq, r.made, r.last) .. payload(r)
end

local function ended_state(s)
  return s == 'a' or s == 'c' or s == 'g'
end

-- Records read with one HMGET, and changes written back with one HSET,
-- one ZADD and one ZREM per key at the end of a script: a batch of jobs
-- costs the same few commands as one.
local batch = { recs = {}, hset = {}, hset_list = {}, zadd = {}, zrem = {},
  dead_add = {}, dead_rem = {}, ended = {} }

local function read(ids)
  local missing = {}
  for _, id in ipairs(ids) do
    if batch.recs[id] == nil then missing[#missing + 1] = id end
  end
  if #missing == 0 then return end
  local got = redis.call('HMGET', KEYS[2], unpack(missing))
  for i, id in ipairs(missing) do
    if batch.recs[id] == nil then
      batch.recs[id] = got[i] and parse(got[i]) or false
    end
  end
end

local function put(id, r)
  batch.recs[id] = r
  batch.hset[id] = r
end

local function push(list, a, b)
  list[#list + 1] = a
  if b ~= nil then list[#list + 1] = b end
end

-- Marks `id` ended at `now` (see `ends`).
local function ended_at(id, now)
  if batch.now_text == nil then batch.now_text = num(now) end
  push(batch.ended, batch.now_text, id)
end

-- Ends a job: its payload goes, its record stays for the retention.
local function finish(id, r, how, token, now)
  r.s, r.last, r.payload = how, token, ''
  put(id, r)
  ended_at(id, now)
end

local function flush()
  local args = batch.hset_list
  for id, r in pairs(batch.hset) do push(args, id, pack(r)) end
  if #args > 0 then redis.call('HSET', KEYS[2], unpack(args)) end
  if #batch.zrem > 0 then redis.call('ZREM', KEYS[1], unpack(batch.zrem)) end
  if #batch.zadd > 0 then redis.call('ZADD', KEYS[1], unpack(batch.zadd)) end
  if #batch.dead_rem > 0 then redis.call('ZREM', KEYS[3], unpack(batch.dead_rem)) end
  if #batch.dead_add > 0 then redis.call('ZADD', KEYS[3], unpack(batch.dead_add)) end
  if #batch.ended > 0 then redis.call('RPUSH', KEYS[4], unpack(batch.ended)) end
end

-- The earliest score in `due` before this script's changes, or nil.
local function head()
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if first[2] then return tonumber(first[2]) end
  return nil
end

-- Tells sleeping consumers of a job due at `at`, if it is earlier than
-- anything they knew of.
local function hint(channel, at, before)
  if at and (before == nil or at < before) then
    redis.call('PUBLISH', channel, num(at))
  end
end

-- Acks the jobs listed in ARGV from `from`, as (id, fence, token) triples:
-- per job 1 acked by this call (or by its first attempt, whose reply was
-- lost), 2 this delivery was acked before (a repeated ack: nothing
-- changes), or -1 the lease is lost (the job went to another delivery, or
-- it ended some other way). `now` is read only if a job is acked.
local function ack_jobs(from, now)
  local n = (#ARGV - from + 1) / 3
  local ids = {}
  for i = 1, n do ids[i] = ARGV[from + (i - 1) * 3] end
  read(ids)
  local out = {}
  for i = 1, n do
    local at = from + (i - 1) * 3
    local id, fence, token = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2]
    local r = batch.recs[id]
    if not r or r.fence ~= fence then
      out[i] = -1
    elseif r.s == 'l' then
      now = now or clock()
      push(batch.zrem, r.seq .. id)
      finish(id, r, 'a', token, now)
      out[i] = 1
    elseif r.s == 'a' then
      if r.last == token then out[i] = 1 else out[i] = 2 end
    else
      out[i] = -1
    end
  end
  return out
end
