-- ARGV: id, fence, delay, max attempts, token, 1 if a retry, answer time
-- to live (ms), wake channel. KEYS[7]: this call's answer, for a retry.
-- Returns 1 to be retried after the delay, 2 dead-lettered (out of
-- attempts), -1 the lease is lost.
if ARGV[6] == '1' then
  local answer = redis.call('GET', KEYS[7])
  if answer then return tonumber(answer) end
end
local id, fence, token = ARGV[1], tonumber(ARGV[2]), ARGV[5]
read({id})
local r = batch.recs[id]
if not r or r.s ~= 'l' or r.fence ~= fence then return -1 end
local now = clock()
local member = r.seq .. id
local answer = 1
r.last = token
if r.attempt >= tonumber(ARGV[4]) then
  r.s = 'x'
  push(batch.zrem, member)
  push(batch.dead_add, now, member)
  answer = 2
else
  -- Due again after the delay: its due time says so (a delivery, a
  -- listing, the lateness measured), and a release puts it back there.
  r.s, r.due = 'w', now + tonumber(ARGV[3])
  push(batch.zadd, num(r.due), member)
end
put(id, r)
if answer == 1 then
  -- Due again sooner than anything sleeping consumers knew of (its own
  -- lease deadline, say): wake them, as a schedule would.
  hint(ARGV[8], r.due, head()) -- before the writes (schedule.lua says why)
end
flush()
redis.call('SET', KEYS[7], answer, 'PX', ARGV[7])
return answer
