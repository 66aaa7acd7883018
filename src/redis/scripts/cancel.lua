-- ARGV: the answers' time to live (ms), then per job: id, token. KEYS[6 +
-- k]: job k's answer key, where a winning cancel keeps the payload for a
-- retry of the same call. Per job, returns {'cancelled', payload} (also to
-- a retry of the call that won), {'in_flight'}, {'acked'}, {'ended'} or
-- {'unknown'}.
local ttl = ARGV[1]
local n = (#ARGV - 1) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 + (i - 1) * 2] end
read(ids)
local out = {}
local now
for i = 1, n do
  local id, token = ARGV[2 + (i - 1) * 2], ARGV[3 + (i - 1) * 2]
  local answer = KEYS[6 + i]
  local r = batch.recs[id]
  if not r then
    out[i] = {'unknown'}
  elseif r.s == 'w' or r.s == 'x' then
    now = now or clock()
    if r.s == 'w' then push(batch.zrem, r.seq .. id) else push(batch.dead_rem, r.seq .. id) end
    local body = payload(r)
    finish(id, r, 'c', token, now)
    redis.call('SET', answer, body, 'PX', ttl)
    out[i] = {'cancelled', body}
  elseif r.s == 'l' then
    out[i] = {'in_flight'}
  elseif r.s == 'a' then
    out[i] = {'acked'}
  elseif r.s == 'c' and r.last == token then
    out[i] = {'cancelled', redis.call('GET', answer) or ''}
  else
    out[i] = {'ended'}
  end
end
flush()
return out
