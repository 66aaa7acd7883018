-- ARGV: id, wake channel. Moves a dead-lettered job back to waiting, due
-- now, with its attempts reset. Returns 1, or 0 if it is not dead.
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if not meta then return 0 end
local state, _, _, member = parse(meta)
if state ~= 'x' then return 0 end
redis.call('ZREM', KEYS[4], member)
store(id, 'd', 0, now, member)
redis.call('ZADD', KEYS[1], num(now), member)
hint_if_first(member, now, ARGV[2])
return 1
