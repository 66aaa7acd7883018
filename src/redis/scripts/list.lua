-- ARGV: what ('w' waiting, 'l' in flight: both in `due`; 'x' dead: in
-- `dead`), the lowest score as ZCOUNT's exclusive upper bound ('' for
-- none: '(t' for t included, 't' for t excluded), the highest score ('' for
-- none), '1' if the highest is included, the page's size, then the cursor:
-- its score and member ('' and '' on the first page).
-- Reads at most a page of members, from the cursor on, in the set's order
-- (score, then member): O(log n + page), however large the set. Returns
-- {next score, next member (both '' at the end), then per job of the kind
-- asked for: id, payload, attempts, due, score}. A page may hold fewer
-- jobs than its size (members of the other kind are read and skipped) and
-- still have a next cursor.
local key = KEYS[1]
if ARGV[1] == 'x' then key = KEYS[3] end
local limit = tonumber(ARGV[5])
local top, top_in = tonumber(ARGV[3]), ARGV[4] == '1'

-- Whether member `a` sorts at or before `b` (bytes, as Redis orders them:
-- Lua's own comparison follows the locale).
local function at_or_before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a <= #b
end

local start
if ARGV[6] == '' then
  start = 0
  if ARGV[2] ~= '' then start = redis.call('ZCOUNT', key, '-inf', ARGV[2]) end
else
  local score, member = ARGV[6], ARGV[7]
  local now = redis.call('ZSCORE', key, member)
  if now and tonumber(now) == tonumber(score) then
    start = redis.call('ZRANK', key, member) + 1
  else
    -- The cursor's member moved or went: find the first member after
    -- (score, member) among those with its score, by bisection.
    local lo = redis.call('ZCOUNT', key, '-inf', '(' .. score)
    local hi = redis.call('ZCOUNT', key, '-inf', score)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local m = redis.call('ZRANGE', key, mid, mid)[1]
      if at_or_before(m, member) then lo = mid + 1 else hi = mid end
    end
    start = lo
  end
end

local got = redis.call('ZRANGE', key, start, start + limit - 1, 'WITHSCORES')
local members, scores, ids = {}, {}, {}
local ended = #got < 2 * limit
for i = 1, #got, 2 do
  local score = tonumber(got[i + 1])
  if top and (score > top or (score == top and not top_in)) then
    ended = true
    break
  end
  local n = #members + 1
  members[n], scores[n], ids[n] = got[i], score, string.sub(got[i], 9)
end
local out = {'', ''}
if #members > 0 and not ended then
  out[1], out[2] = num(scores[#members]), members[#members]
end
if #ids == 0 then return out end
local raw = redis.call('HMGET', KEYS[2], unpack(ids))
local want = ARGV[1]
for i, id in ipairs(ids) do
  local rec = raw[i]
  if rec then
    local s, _, attempt, due, seq = struct.unpack(HEADER, rec)
    if s == want and seq == string.sub(members[i], 1, 8) then
      push(out, id, string.sub(rec, HEADER_LEN + 1))
      push(out, attempt, due)
      push(out, scores[i])
    end
  end
end
return out
