-- Shared head of every script (the client prepends it). KEYS, in order:
-- 1 due: ZSET member -> when something must next happen to the job, in
--   microseconds of the server's clock: its due time while it waits, its
--   lease deadline while a consumer holds it. A member is the job's
--   16-hex-digit sequence number then its id, so equal scores come out
--   first in, first out.
-- 2 jobs: HASH id -> the job's record (below), live or ended.
-- 3 dead: ZSET member -> when the job was dead-lettered.
-- 4 ended: ZSET id -> when the job ended (acked, cancelled, discarded); the
--   retention trimmer deletes the records of ids older than the retention.
-- 5 seq: the sequence counter.
-- 6 spread: HASH start, window, total, done: the misfire policy's spread.
-- Later KEYS are each script's own (a claim's replay record, answers).
--
-- A record is "state|fence|attempt|due|seq|made|last|payload":
--   state   w waiting, l leased, x dead-lettered; ended: a acked,
--           c cancelled, g discarded by the misfire policy
--   fence   deliveries ever made; never goes back (requeue included), so
--           a delivery is known by (id, fence)
--   attempt deliveries since it was scheduled or requeued
--   due     when it was due, microseconds
--   seq     16 hex digits: the member is seq .. id
--   made    the request token of the schedule that created it
--   last    the request token of the last call that changed it
--   payload the rest, verbatim (empty once ended)
-- A retried call carries the token of its first attempt, so it can tell
-- its own earlier effect from anyone else's and answer the same.

local function num(x)
  return string.format('%.0f', x)
end

local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local function parse(rec)
  local s, fence, attempt, due, seq, made, last, at =
    string.match(rec, '^(%a)|(%d+)|(%d+)|(%d+)|(%x+)|([^|]*)|([^|]*)|()')
  return {
    s = s, fence = tonumber(fence), attempt = tonumber(attempt),
    due = tonumber(due), seq = seq, made = made, last = last,
    payload = string.sub(rec, at),
  }
end

local function pack(r)
  return r.s .. '|' .. num(r.fence) .. '|' .. num(r.attempt) .. '|' .. num(r.due)
    .. '|' .. r.seq .. '|' .. r.made .. '|' .. r.last .. '|' .. r.payload
end

local function ended_state(s)
  return s == 'a' or s == 'c' or s == 'g'
end

-- Records read with one HMGET, and changes written back with one HSET,
-- one ZADD and one ZREM per key at the end of a script: a batch of jobs
-- costs the same few commands as one.
local batch = { recs = {}, hset = {}, zadd = {}, zrem = {}, dead_add = {},
  dead_rem = {}, ended = {} }

local function read(ids)
  if #ids == 0 then return end
  local got = redis.call('HMGET', KEYS[2], unpack(ids))
  for i, id in ipairs(ids) do
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

-- Ends a job: its payload goes, its record stays for the retention.
local function finish(id, r, how, token, now)
  r.s, r.last, r.payload = how, token, ''
  put(id, r)
  push(batch.ended, num(now), id)
end

local function flush()
  local args = {}
  for id, r in pairs(batch.hset) do push(args, id, pack(r)) end
  if #args > 0 then redis.call('HSET', KEYS[2], unpack(args)) end
  if #batch.zrem > 0 then redis.call('ZREM', KEYS[1], unpack(batch.zrem)) end
  if #batch.zadd > 0 then redis.call('ZADD', KEYS[1], unpack(batch.zadd)) end
  if #batch.dead_rem > 0 then redis.call('ZREM', KEYS[3], unpack(batch.dead_rem)) end
  if #batch.dead_add > 0 then redis.call('ZADD', KEYS[3], unpack(batch.dead_add)) end
  if #batch.ended > 0 then redis.call('ZADD', KEYS[4], unpack(batch.ended)) end
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
