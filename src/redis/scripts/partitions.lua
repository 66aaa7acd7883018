-- KEYS: the queue's partition count; the one-partition layout's due and
-- jobs. ARGV: the count this client asks for, or '' to take the queue's;
-- '1' to connect to an existing queue only; '1' to peek (store nothing,
-- answer what would be stored).
-- Stores a count if the queue has none and answers {the queue's count,
-- 1 if this call stored it (or would have, when it peeks), else 0}. A
-- queue with no count stored (new, or made before counts were) has the
-- count asked for, or one if none was; but one that holds jobs in the
-- one-partition layout has one partition. To an existing queue only, it
-- stores nothing, and answers nil for a queue with neither count nor jobs.
local have = redis.call('GET', KEYS[1])
if have then return {have, 0} end
local old = redis.call('EXISTS', KEYS[2], KEYS[3]) > 0
if ARGV[2] == '1' then
  if old then return {'1', 0} end
  return false
end
local count = ARGV[1]
if count == '' or old then count = '1' end
if ARGV[3] ~= '1' then redis.call('SET', KEYS[1], count) end
return {count, 1}
