-- KEYS: the queue's job schedulers. Answers the server's clock (µs, as
-- text) and every record: {now, key, record, key, record, ...}. One call,
-- so the clock is the node's that holds them.
local _, now = clock()
local all = redis.call('HGETALL', KEYS[1])
table.insert(all, 1, now)
return all
