-- ARGV: first rank, last rank. The dead letters in that range of the dead
-- set, oldest first: {id, payload, attempts, dead-lettered at, ...}.
local page = redis.call('ZRANGE', KEYS[3], tonumber(ARGV[1]), tonumber(ARGV[2]), 'WITHSCORES')
local ids = {}
for i = 1, #page, 2 do ids[#ids + 1] = string.sub(page[i], 9) end
read(ids)
local out = {}
for i, id in ipairs(ids) do
  local r = batch.recs[id]
  if r and r.s == 'x' then
    push(out, id, payload(r))
    push(out, r.attempt, tonumber(page[i * 2]))
  end
end
return out
