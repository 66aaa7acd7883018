-- Shared head of every script (the client prepends it, and
-- `records.lua` after it for the scripts that work on parsed records).
-- KEYS, in order:
-- 1 due: ZSET member -> when something must next happen to the job, in
--   microseconds of the server's clock: its due time while it waits, its
--   lease deadline while a consumer holds it. A member is the job's
--   sequence number (8 bytes) then its id, so equal scores come out by
--   priority, then first in, first out.
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
--   seq     8 bytes: the rank (255 minus the priority; 0 for jobs made
--           before priorities existed), then a 7-byte big-endian count;
--           the member is seq .. id
--   made    8 bytes: the request token of the schedule that created it
--   last    8 bytes: the request token of the last call that changed it
-- (`struct`, a C library every Redis has, packs and unpacks it in one
-- call; the hot loops of schedule and cancel cut fields out by these byte
-- offsets instead: state 1, fence 2-5, attempt 6-9, due 10-17, seq 18-25,
-- made 26-33, last 34-41.) A retried call carries the token of its first
-- attempt, so it can tell its own earlier effect from anyone else's and
-- answer the same. Scores and due times are whole numbers of microseconds
-- below 2^53, exact in a double and in Redis's conversion; passed to Redis
-- as text where the text is at hand (a Lua number costs a printf).

local HEADER = '>c1I4I4dc8c8c8'

-- A whole number as text, for concatenation (Lua's own drops digits).
local function num(x)
  return string.format('%.0f', x)
end
local HEADER_LEN = 41

-- The server's clock in microseconds, as a number and as text: the text
-- is TIME's digits joined, since a Lua number made text costs a printf.
local function clock()
  local t = redis.call('TIME')
  local text = t[1] .. string.sub('000000', #t[2] + 1) .. t[2]
  return tonumber(text), text
end

local function push(list, a, b)
  list[#list + 1] = a
  if b ~= nil then list[#list + 1] = b end
end

-- The earliest score in `due` before this script's changes, or nil.
local function head()
  local first = redis.call('ZRANGE', KEYS[1], '0', '0', 'WITHSCORES')
  if first[2] then return tonumber(first[2]) end
  return nil
end

-- Tells sleeping consumers of a job due at `at`, if it is earlier than
-- anything they knew of. A `…:shard-wake` channel (a Redis 7 cluster) is a
-- shard channel: SPUBLISH stays on the partition's shard.
local function hint(channel, at, before)
  if at and (before == nil or at < before) then
    local publish = 'PUBLISH'
    if string.sub(channel, -11) == ':shard-wake' then publish = 'SPUBLISH' end
    redis.call(publish, channel, num(at))
  end
end
