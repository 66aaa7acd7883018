-- ARGV: id, attempt, delay, max attempts. Returns 1 to be retried after
-- the delay, 2 dead-lettered (out of attempts), -1 the lease is lost.
local id = ARGV[1]
local attempt, due, member = held(id, ARGV[2])
if not member then return -1 end
if attempt >= tonumber(ARGV[4]) then
  to_dead(id, attempt, due, member)
  return 2
end
store(id, 'd', attempt, due, member)
redis.call('ZADD', KEYS[1], num(now + tonumber(ARGV[3])), member)
return 1
