-- ARGV: id, attempt. Returns 1 acked, 2 had already been acked, 0 unknown,
-- -1 the lease is lost (it ran out and the job went to another delivery).
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if not meta then
  if redis.call('HGET', KEYS[5], id) == 'a' then return 2 end
  return 0
end
local state, attempt, _, member = parse(meta)
if state ~= 'l' or attempt ~= tonumber(ARGV[2]) then
  return -1
end
redis.call('ZREM', KEYS[1], member)
ended(id, 'a')
return 1
