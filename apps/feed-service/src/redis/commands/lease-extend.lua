-- Compare-and-extend of the author lease: only its holder may extend it.
--
-- KEYS[1] author:<id>; ARGV[1] the holder, ARGV[2] the new lifetime (ms). Returns 1 when extended, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
