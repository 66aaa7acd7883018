-- KEYS: the queue's job schedulers (HASH key -> record), their payloads
-- (HASH key -> payload), the last version of each removed key (HASH),
-- records superseded whose runs are not yet known cancelled (HASH
-- 'key\nversion' -> 'when superseded (µs)\nrecord'), and this call's answer, all under the
-- queue's own tag. ARGV: key, timetable (a record's lines after the
-- first two), payload, token, 1 if a retry, the answer's time to live
-- (ms), the timetable kinds the caller reads. Answers {-1} and changes
-- nothing if the caller cannot read the scheduler's current timetable
-- (it could not cancel its runs).
-- A record is text, one field a line: version (one more at each change),
-- horizon (µs: runs are made for the timetable's instants up to it), then
-- the timetable (`schedule/timetable.rs`). A new or changed scheduler's
-- horizon is now: its runs start after this call.
-- Answers {0 unchanged | 1 created | 2 updated, the current record, the
-- version now, the server's now, then the key's superseded records as
-- (field, record) pairs: the caller cancels their runs}; a retry whose
-- first attempt ran answers what that attempt did.
local kept = kept_answer(ARGV[5], KEYS[5])
if kept then return kept end
local key = ARGV[1]
local old = redis.call('HGET', KEYS[1], key)
if old and not readable(old, ARGV[7]) then return {-1} end
-- A key added again goes on from its last version: its new runs' ids are
-- never those its removal cancelled.
local version = (tonumber(redis.call('HGET', KEYS[3], key)) or 0) + 1
local _, now = clock()
local what, record = 1, nil
if old then
  local v, spec = string.match(old, '^(%d+)\n%-?%d+\n(.*)$')
  if spec == ARGV[2] and redis.call('HGET', KEYS[2], key) == ARGV[3] then
    what, record, version = 0, old, tonumber(v)
  else
    what, version = 2, (tonumber(v) or 0) + 1
    redis.call('HSET', KEYS[4], key .. '\n' .. v, now .. '\n' .. old)
  end
end
if what ~= 0 then
  record = num(version) .. '\n' .. now .. '\n' .. ARGV[2]
  redis.call('HSET', KEYS[1], key, record)
  redis.call('HSET', KEYS[2], key, ARGV[3])
end
local answer = {what, record, num(version), now}
superseded(KEYS[4], key, answer)
redis.call('SET', KEYS[5], cmsgpack.pack(answer), 'PX', ARGV[6])
return answer
