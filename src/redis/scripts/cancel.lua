-- ARGV: the answers' time to live (ms), then per job: id, token. KEYS[7]:
-- this call's answers, a hash token -> payload where the jobs it cancels
-- keep their payloads for a retry of the same call (one key per call,
-- however many jobs it carries). Per job, returns {'cancelled', payload}
-- (also to a retry of the call that won), {'in_flight'}, {'acked'},
-- {'ended'} or {'unknown'}.
local ttl = ARGV[1]
local answers = KEYS[7]
local n = (#ARGV - 1) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 * i] end
read(ids)
local out, kept = {}, {}
local now
for i = 1, n do
  local id, token = ARGV[2 * i], ARGV[2 * i + 1]
  local r = batch.recs[id]
  if not r then
    out[i] = {'unknown'}
  elseif r.s == 'w' or r.s == 'x' then
    now = now or clock()
    if r.s == 'w' then push(batch.zrem, r.seq .. id) else push(batch.dead_rem, r.seq .. id) end
    local body = payload(r)
    finish(id, r, 'c', token, now)
    push(kept, token, body)
    out[i] = {'cancelled', body}
  elseif r.s == 'l' then
    out[i] = {'in_flight'}
  elseif r.s == 'a' then
    out[i] = {'acked'}
  elseif r.s == 'c' and r.last == token then
    out[i] = {'cancelled', redis.call('HGET', answers, token) or ''}
  else
    out[i] = {'ended'}
  end
end
flush()
if #kept > 0 then
  redis.call('HSET', answers, unpack(kept))
  redis.call('PEXPIRE', answers, ttl)
end
return out
