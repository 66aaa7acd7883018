-- KEYS: the queue's job schedulers (HASH key -> record), their payloads
-- (HASH key -> payload), the last version of each removed key (HASH),
-- and this call's answer, all under the queue's own tag. ARGV: key,
-- timetable (a record's lines after the first two), payload, token, 1 if
-- a retry, the answer's time to live (ms).
-- A record is text, one field a line: version (one more at each change),
-- horizon (µs: runs are made for the timetable's instants up to it), then
-- the timetable (`schedule.rs`). A new or changed scheduler's horizon is
-- now: its runs start after this call.
-- Answers {0 unchanged | 1 created | 2 updated, the old record or false,
-- the version now, the server's now}; a retry whose first attempt ran
-- answers what that attempt did.
if ARGV[5] == '1' then
  local kept = redis.call('GET', KEYS[4])
  if kept then return cmsgpack.unpack(kept) end
end
local old = redis.call('HGET', KEYS[1], ARGV[1])
-- A key added again goes on from its last version: its new runs' ids are
-- never those its removal cancelled.
local version = (tonumber(redis.call('HGET', KEYS[3], ARGV[1])) or 0) + 1
local _, now = clock()
local answer
if old then
  local v, spec = string.match(old, '^(%d+)\n%-?%d+\n(.*)$')
  if spec == ARGV[2] and redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[3] then
    answer = {0, old, v, now}
  else
    version = (tonumber(v) or 0) + 1
  end
end
if not answer then
  redis.call('HSET', KEYS[1], ARGV[1], num(version) .. '\n' .. now .. '\n' .. ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
  answer = {old and 2 or 1, old or false, num(version), now}
end
redis.call('SET', KEYS[4], cmsgpack.pack(answer), 'PX', ARGV[6])
return answer
