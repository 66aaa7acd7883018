-- KEYS: the queue's job schedulers, their payloads, the last version of
-- each removed key, records superseded whose runs are not yet known
-- cancelled, and this call's answer. ARGV: key, token, 1 if a retry, the
-- answer's time to live (ms), the timetable kinds the caller reads.
-- Answers {-1} and changes nothing if the caller cannot read the
-- scheduler's timetable (it could not cancel its runs). Else removes the scheduler, keeping its version
-- (a key added again goes on from it) and its record among the
-- superseded. Answers {1 if there was one else 0, then the key's
-- superseded records as (field, record) pairs: the caller cancels their
-- runs}; a retry whose first attempt ran answers what that attempt did.
local kept = kept_answer(ARGV[3], KEYS[5])
if kept then return kept end
local key = ARGV[1]
local old = redis.call('HGET', KEYS[1], key)
if old and not readable(old, ARGV[5]) then return {-1} end
local answer = {0}
if old then
  local v = string.match(old, '^(%d+)\n')
  local _, now = clock()
  redis.call('HSET', KEYS[3], key, v)
  redis.call('HSET', KEYS[4], key .. '\n' .. v, now .. '\n' .. old)
  redis.call('HDEL', KEYS[1], key)
  redis.call('HDEL', KEYS[2], key)
  answer[1] = 1
end
superseded(KEYS[4], key, answer)
redis.call('SET', KEYS[5], cmsgpack.pack(answer), 'PX', ARGV[4])
return answer
