-- The job scheduler calls' shared helpers.

-- The answer a call kept for its retry (`key`), if this is one (`again`
-- is '1') and its first attempt ran; nil otherwise.
local function kept_answer(again, key)
  if again ~= '1' then return nil end
  local kept = redis.call('GET', key)
  if kept then return cmsgpack.unpack(kept) end
  return nil
end

-- Whether the calling build reads record `rec`'s timetable: its kind (the
-- record's fourth line) is one of `kinds`, separated by spaces. One that
-- does not (a cron timetable in a build without feature `cron`) cannot
-- cancel the runs made for it, so it must not change or remove it.
local function readable(rec, kinds)
  local kind = string.match(rec, '^%d+\n%-?%d+\n[^\n]*\n([^\n]*)')
  return kind ~= nil and string.find(' ' .. kinds .. ' ', ' ' .. kind .. ' ', 1, true) ~= nil
end

-- Appends to `out` the superseded records of scheduler `key` kept in hash
-- `hash` ('key\nversion' -> 'when superseded (µs)\nrecord'), as (field,
-- value) pairs. The hash holds only records whose runs a call has not
-- yet cancelled, so it is read whole.
local function superseded(hash, key, out)
  local all = redis.call('HGETALL', hash)
  local prefix = key .. '\n'
  for i = 1, #all, 2 do
    local field = all[i]
    if string.sub(field, 1, #prefix) == prefix and string.find(field, '^%d+$', #prefix + 1) then
      out[#out + 1] = field
      out[#out + 1] = all[i + 1]
    end
  end
end
