-- KEYS: the queue's job schedulers, their payloads, and the last version
-- of each removed key. ARGV: key. Removes the scheduler, keeping its
-- version (a key added again goes on from it); answers {its record, now},
-- or false if there was none.
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return false end
redis.call('HSET', KEYS[3], ARGV[1], string.match(old, '^(%d+)\n'))
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
local _, now = clock()
return {old, now}
