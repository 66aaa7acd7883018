-- ARGV per job: id, fence, token. Per job, returns 1 acked by this call
-- (or by its first attempt, whose reply was lost), 2 this delivery was
-- acked before (a repeated ack: nothing changes), or -1 the lease is lost
-- (the job went to another delivery, or it ended some other way).
local n = #ARGV / 3
local ids = {}
for i = 1, n do ids[i] = ARGV[(i - 1) * 3 + 1] end
read(ids)
local out = {}
local now
for i = 1, n do
  local id, fence, token = ARGV[(i - 1) * 3 + 1], tonumber(ARGV[(i - 1) * 3 + 2]), ARGV[(i - 1) * 3 + 3]
  local r = batch.recs[id]
  if not r or r.fence ~= fence then
    out[i] = -1
  elseif r.s == 'l' then
    now = now or clock()
    push(batch.zrem, r.seq .. id)
    finish(id, r, 'a', token, now)
    out[i] = 1
  elseif r.s == 'a' then
    if r.last == token then out[i] = 1 else out[i] = 2 end
  else
    out[i] = -1
  end
end
flush()
return out
