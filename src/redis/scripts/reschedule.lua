-- ARGV: id, 'at' or 'in', microseconds, wake channel. Moves a waiting job
-- (ordered among equal due times as if scheduled now). Returns {1, due},
-- or {0, state} if it is not waiting.
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if not meta then
  return {0, redis.call('HGET', KEYS[5], id) or 'unknown'}
end
local state, attempt, _, member = parse(meta)
if state ~= 'd' then
  return {0, state}
end
local due = tonumber(ARGV[3])
if ARGV[2] == 'in' then due = now + due end
redis.call('ZREM', KEYS[1], member)
member = new_member(id)
store(id, 'd', attempt, due, member)
redis.call('ZADD', KEYS[1], num(due), member)
hint_if_first(member, due, ARGV[4])
return {1, due}
