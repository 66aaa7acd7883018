-- KEYS: the queue's job schedulers, their payloads, the last version of
-- each removed key, and this call's answer. ARGV: key, token, 1 if a
-- retry, the answer's time to live (ms). Removes the scheduler, keeping
-- its version (a key added again goes on from it); answers {its record,
-- now}, or false if there was none; a retry whose first attempt ran
-- answers what that attempt did.
if ARGV[3] == '1' then
  local kept = redis.call('GET', KEYS[4])
  if kept then
    local answer = cmsgpack.unpack(kept)
    if answer[1] then return answer end
    return false
  end
end
local old = redis.call('HGET', KEYS[1], ARGV[1])
local answer = {false}
if old then
  redis.call('HSET', KEYS[3], ARGV[1], string.match(old, '^(%d+)\n'))
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  local _, now = clock()
  answer = {old, now}
end
redis.call('SET', KEYS[4], cmsgpack.pack(answer), 'PX', ARGV[4])
if old then return answer end
return false
