-- Small-lane holders whose deadline (Redis TIME, ms) is still in the future: large fan-outs'
-- chunk writers yield while it is above zero (docs/FEED.md "Lanes").
--
-- KEYS[1] lane:small. Returns the count.
local t = redis.call('TIME')
return redis.call('ZCOUNT', KEYS[1], '(' .. (t[1] * 1000 + math.floor(t[2] / 1000)), '+inf')
