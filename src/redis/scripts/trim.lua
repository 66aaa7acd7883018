-- ARGV: retention (microseconds), limit. Forgets up to `limit` jobs that
-- ended more than the retention ago. Returns {trimmed, when the oldest
-- ended job left ended (-1 if none), now}.
local now = clock()
local old = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', num(now - tonumber(ARGV[1])), 'LIMIT', 0, tonumber(ARGV[2]))
if #old > 0 then
  redis.call('HDEL', KEYS[2], unpack(old))
  redis.call('ZREM', KEYS[4], unpack(old))
end
local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
return {#old, oldest[2] and tonumber(oldest[2]) or -1, now}
