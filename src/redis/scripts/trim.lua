-- ARGV: retention (microseconds), limit. Forgets up to `limit` jobs that
-- ended more than the retention ago. Returns {trimmed, when the oldest
-- ended job left ended (-1 if none), now (-1 if not read)}.
local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
if not oldest[2] then return {0, -1, -1} end
local now = clock()
local cutoff = now - tonumber(ARGV[1])
if tonumber(oldest[2]) > cutoff then return {0, tonumber(oldest[2]), now} end
local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', cutoff, 'LIMIT', 0, tonumber(ARGV[2]))
redis.call('HDEL', KEYS[2], unpack(old))
redis.call('ZREM', KEYS[4], unpack(old))
oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
return {#old, oldest[2] and tonumber(oldest[2]) or -1, now}
