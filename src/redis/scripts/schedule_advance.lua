-- KEYS: the queue's job schedulers. ARGV: key, version, horizon seen,
-- new horizon. Moves the horizon on if the record is still the version and
-- horizon the caller read (another consumer may have moved it, or an
-- upsert changed the timetable). Answers 1 if it moved, else 0.
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return 0 end
local v, h, spec = string.match(record, '^(%d+)\n(%-?%d+)\n(.*)$')
if v ~= ARGV[2] or h ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], v .. '\n' .. ARGV[4] .. '\n' .. spec)
return 1
