-- ARGV: id, fence, lease (microseconds). Pushes a held job's lease
-- deadline to now + lease (a retry pushes it again, to the same effect).
-- Returns 1, or -1 if the lease is lost.
local id, fence = ARGV[1], tonumber(ARGV[2])
read({id})
local r = batch.recs[id]
if not r or r.s ~= 'l' or r.fence ~= fence then return -1 end
redis.call('ZADD', KEYS[1], clock() + tonumber(ARGV[3]), r.seq .. id)
return 1
