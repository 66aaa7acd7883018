-- ARGV: the answers' time to live (ms), then per job: id, token. KEYS[7]:
-- this call's answers, where the jobs it cancels keep their payloads for
-- a retry of the same call: one string per call, msgpack of (token,
-- payload, ...), whatever the number of jobs, holding every attempt's
-- winners. Returns per job two items:
-- 'c' and the payload if cancelled (also to a retry of the call that
-- won); else 'f' (in flight), 'a' (acked), 'e' (ended) or 'u' (unknown),
-- and ''. This loop runs once per job: it reads a record's state as its
-- first byte and cuts the header's fields out where they lie, and counts
-- its lists by hand (tables, `#t` and unpacking were most of its cost).
local ttl = ARGV[1]
local answers = KEYS[7]
local n = (#ARGV - 1) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 * i] end
local raw = redis.call('HMGET', KEYS[2], unpack(ids))
-- Records this call rewrote, for an id named twice.
local rewritten = {}
local out, kept, nk = {}, {}, 0
local records, nr = {}, 0
local members, nm = {}, 0
local dead = {}
local ends, ne = {}, 0
local now, now_text
-- A retry's kept answers, token -> payload, read once.
local saved
local function kept_body(token)
  if saved == nil then
    saved = {}
    local blob = redis.call('GET', answers)
    local list = blob and cmsgpack.unpack(blob) or {}
    for k = 1, #list - 1, 2 do saved[list[k]] = list[k + 1] end
  end
  return saved[token] or ''
end
local byte, sub = string.byte, string.sub
for i = 1, n do
  local id, token = ids[i], ARGV[2 * i + 1]
  local rec = rewritten[id] or raw[i]
  local what, body = 'u', ''
  if rec then
    -- The state is the record's first byte; the header's fields are cut
    -- out where they lie (see common.lua), cheaper than unpacking them.
    local s = byte(rec, 1)
    if s == 119 or s == 120 then -- 'w', 'x'
      if now == nil then now, now_text = clock() end
      local member = sub(rec, 18, 25) .. id
      if s == 119 then nm = nm + 1; members[nm] = member else push(dead, member) end
      body = sub(rec, HEADER_LEN + 1)
      rec = 'c' .. sub(rec, 2, 33) .. token
      rewritten[id] = rec
      records[nr + 1], records[nr + 2], nr = id, rec, nr + 2
      ends[ne + 1], ends[ne + 2], ne = now_text, id, ne + 2
      kept[nk + 1], kept[nk + 2], nk = token, body, nk + 2
      what = 'c'
    elseif s == 108 then -- 'l'
      what = 'f'
    elseif s == 97 then -- 'a'
      what = 'a'
    elseif s == 99 and sub(rec, 34, 41) == token then -- 'c' by this call
      what, body = 'c', kept_body(token)
    else
      what = 'e'
    end
  end
  out[2 * i - 1], out[2 * i] = what, body
end
if nr > 0 then
  redis.call('HSET', KEYS[2], unpack(records))
  redis.call('RPUSH', KEYS[4], unpack(ends))
end
if nm > 0 then redis.call('ZREM', KEYS[1], unpack(members)) end
if #dead > 0 then redis.call('ZREM', KEYS[3], unpack(dead)) end
if nk > 0 then
  -- A retry that wins cancels of its own keeps its first attempts'
  -- winners too (read above, as it met them), or a later retry loses them.
  if saved then
    for token, body in pairs(saved) do kept[nk + 1], kept[nk + 2], nk = token, body, nk + 2 end
  end
  redis.call('SET', answers, cmsgpack.pack(kept), 'PX', ttl)
end
return out
