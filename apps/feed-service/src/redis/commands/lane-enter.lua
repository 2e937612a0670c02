-- The small-lane marker (docs/FEED.md "Lanes"): a holder enters with a deadline of now + ttl (Redis
-- TIME, one clock for every replica), expired holders are dropped, and the key lives as long as its
-- latest deadline. A holder that crashes without leaving stops counting at its deadline.
--
-- KEYS[1] lane:small; ARGV[1] the holder, ARGV[2] its ttl (ms). Returns 1.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
