-- ARGV: id, attempt. Returns 1 acked, 2 had already been acked, -1 the
-- lease is lost (it ran out and the job went to another delivery, or the
-- job is unknown).
local id = ARGV[1]
local _, _, member = held(id, ARGV[2])
if not member then
  if redis.call('HGET', KEYS[5], id) == 'a' then return 2 end
  return -1
end
redis.call('ZREM', KEYS[1], member)
ended(id, 'a')
return 1
