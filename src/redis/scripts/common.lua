-- Shared head of every script (prepended by the client). KEYS, in order:
-- 1 due: ZSET member -> when something must next happen to the job (its due
--   time while waiting, its lease deadline while leased), microseconds
-- 2 jobs: HASH id -> "state|attempt|due|member" (state d waiting,
--   l leased, x dead-lettered)
-- 3 payload: HASH id -> bytes
-- 4 dead: ZSET member -> when it was dead-lettered
-- 5 ended: HASH id -> how it ended (a acked, c cancelled, g discarded)
-- 6 ended_at: ZSET id -> when it ended (trimmed after the retention)
-- 7 seq: counter; a member is the 16-hex-digit sequence number then the id,
--   so equal scores order first in, first out
-- 8 spread: HASH start, window, total, done: the current spread plan
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local function num(x)
  return string.format('%.0f', x)
end

local function parse(meta)
  local state, attempt, due, member = string.match(meta, '^(%a)|(%d+)|(%d+)|(.*)$')
  return state, tonumber(attempt), tonumber(due), member
end

local function store(id, state, attempt, due, member)
  redis.call('HSET', KEYS[2], id, state .. '|' .. num(attempt) .. '|' .. num(due) .. '|' .. member)
end

local function new_member(id)
  return string.format('%016x', redis.call('INCR', KEYS[7])) .. id
end

local function ended(id, how)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HSET', KEYS[5], id, how)
  redis.call('ZADD', KEYS[6], num(now), id)
end

-- Publishes `at` on the wake channel if `member` is now the earliest.
local function hint_if_first(member, at, channel)
  local first = redis.call('ZRANGE', KEYS[1], 0, 0)
  if first[1] == member then
    redis.call('PUBLISH', channel, num(at))
  end
end

-- The job `id` if it is leased under `attempt` (the lease's fencing
-- token): its attempt, due time and member; nil if the lease is lost.
local function held(id, attempt)
  local meta = redis.call('HGET', KEYS[2], id)
  if not meta then return nil end
  local state, a, due, member = parse(meta)
  if state ~= 'l' or a ~= tonumber(attempt) then return nil end
  return a, due, member
end

-- Moves a job to the dead letters.
local function to_dead(id, attempt, due, member)
  redis.call('ZREM', KEYS[1], member)
  store(id, 'x', attempt, due, member)
  redis.call('ZADD', KEYS[4], num(now), member)
end
