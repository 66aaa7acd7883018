-- ARGV: id, payload, 'at' or 'in', microseconds, wake channel
-- Returns {1, due} if stored, {0, state} if the id exists or has ended.
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if meta then
  return {0, string.sub(meta, 1, 1)}
end
local gone = redis.call('HGET', KEYS[5], id)
if gone then
  return {0, gone}
end
local due = tonumber(ARGV[4])
if ARGV[3] == 'in' then
  due = now + due
end
local member = new_member(id)
store(id, 'd', 0, due, member)
redis.call('HSET', KEYS[3], id, ARGV[2])
redis.call('ZADD', KEYS[1], num(due), member)
hint_if_first(member, due, ARGV[5])
return {1, due}
