-- ARGV: id, attempt, lease. Pushes a held job's lease deadline to now +
-- lease. Returns 1, or -1 if the lease is lost (it ran out and the job went
-- to another delivery, or it ended).
local _, _, member = held(ARGV[1], ARGV[2])
if not member then return -1 end
redis.call('ZADD', KEYS[1], num(now + tonumber(ARGV[3])), member)
return 1
