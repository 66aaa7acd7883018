-- ARGV: retention (microseconds), limit. Forgets up to `limit` jobs that
-- ended more than the retention ago (`ends` holds (time, id) pairs, oldest
-- first). Returns {trimmed, when the oldest ended job left ended (-1 if
-- none), now (-1 if not read)}.
local first = redis.call('LINDEX', KEYS[4], 0)
if not first then return {0, -1, -1} end
local now = clock()
local cutoff = now - tonumber(ARGV[1])
local at = tonumber(first)
if at and at > cutoff then return {0, at, now} end
local pairs_ = redis.call('LRANGE', KEYS[4], 0, 2 * tonumber(ARGV[2]) - 1)
local old, k, d = {}, 0, 0
for i = 1, #pairs_ - 1, 2 do
  at = tonumber(pairs_[i])
  if at and at > cutoff then break end
  k = k + 1
  -- A pair that does not start with a time is not these scripts': it is
  -- dropped, and no record is deleted for it.
  if at then
    d = d + 1
    old[d] = pairs_[i + 1]
  end
end
if d > 0 then redis.call('HDEL', KEYS[2], unpack(old)) end
redis.call('LTRIM', KEYS[4], 2 * k, -1)
first = redis.call('LINDEX', KEYS[4], 0)
return {k, first and tonumber(first) or -1, now}
