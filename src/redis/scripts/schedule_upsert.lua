-- KEYS: the queue's job schedulers (HASH key -> record), their payloads
-- (HASH key -> payload) and the last version of each removed key (HASH),
-- under the queue's own tag. ARGV: key, timetable
-- (a record's lines after the first two), payload.
-- A record is text, one field a line: version (one more at each change),
-- horizon (µs: runs are made for the timetable's instants up to it), then
-- the timetable (`schedule.rs`). A new or changed scheduler's horizon is
-- now: its runs start after this call.
-- Answers {0 unchanged | 1 created | 2 updated, the old record or false,
-- the new version, now (the new horizon)}.
local old = redis.call('HGET', KEYS[1], ARGV[1])
-- A key added again goes on from its last version: its new runs' ids are
-- never those its removal cancelled.
local version = (tonumber(redis.call('HGET', KEYS[3], ARGV[1])) or 0) + 1
if old then
  local v, spec = string.match(old, '^(%d+)\n%-?%d+\n(.*)$')
  if spec == ARGV[2] and redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[3] then
    return {0, old}
  end
  version = (tonumber(v) or 0) + 1
end
local _, now = clock()
redis.call('HSET', KEYS[1], ARGV[1], num(version) .. '\n' .. now .. '\n' .. ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
if old then return {2, old, version, now} end
return {1, false, version, now}
