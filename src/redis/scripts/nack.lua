-- ARGV: id, attempt, delay, max attempts. Returns 1 to be retried after
-- the delay, 2 dead-lettered (out of attempts), -1 the lease is lost.
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if not meta then return -1 end
local state, attempt, due, member = parse(meta)
if state ~= 'l' or attempt ~= tonumber(ARGV[2]) then
  return -1
end
if attempt >= tonumber(ARGV[4]) then
  redis.call('ZREM', KEYS[1], member)
  store(id, 'x', attempt, due, member)
  redis.call('ZADD', KEYS[4], num(now), member)
  return 2
end
store(id, 'd', attempt, due, member)
redis.call('ZADD', KEYS[1], num(now + tonumber(ARGV[3])), member)
return 1
