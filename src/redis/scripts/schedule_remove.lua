-- KEYS: the queue's job schedulers and their payloads. ARGV: key.
-- Removes the scheduler; answers {its record, now}, or false if there
-- was none.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return false end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
local _, now = clock()
return {old, now}
