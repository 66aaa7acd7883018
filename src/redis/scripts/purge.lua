-- ARGV: limit, token, 1 if a retry, answer time to live (ms). KEYS[7]:
-- this call's answer. Ends up to `limit` dead letters, oldest first, as a
-- cancel of each would: the record stays, marked cancelled with its
-- payload gone, and its id joins `ends`, so the retention forgets it like
-- any ended job (and scheduling the id again says it exists until then).
-- A member whose record no longer matches it is dropped from `dead`.
-- Returns how many members left `dead` (0 once it is empty).
if ARGV[3] == '1' then
  local answer = redis.call('GET', KEYS[7])
  if answer then return tonumber(answer) end
end
local page = redis.call('ZRANGE', KEYS[3], 0, tonumber(ARGV[1]) - 1)
local answer = #page
if answer > 0 then
  local ids = {}
  for i, member in ipairs(page) do ids[i] = string.sub(member, 9) end
  read(ids)
  local now = clock()
  for i, id in ipairs(ids) do
    local r = batch.recs[id]
    push(batch.dead_rem, page[i])
    if r and r.s == 'x' and r.seq == string.sub(page[i], 1, 8) then
      finish(id, r, 'c', ARGV[2], now)
    end
  end
  flush()
end
redis.call('SET', KEYS[7], answer, 'PX', ARGV[4])
return answer
