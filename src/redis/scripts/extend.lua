-- ARGV: id, attempt, lease. Pushes a held job's lease deadline to now +
-- lease. Returns 1, or -1 if the lease is lost (it ran out and the job went
-- to another delivery, or it ended).
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if not meta then return -1 end
local state, attempt, _, member = parse(meta)
if state ~= 'l' or attempt ~= tonumber(ARGV[2]) then
  return -1
end
redis.call('ZADD', KEYS[1], num(now + tonumber(ARGV[3])), member)
return 1
