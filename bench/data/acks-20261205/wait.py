#!/usr/bin/env python3
"""wait.py PORT: WAIT 1 after a write, 200 times, on a primary with one replica; prints ms."""
import sys, time
import redis  # Debian's python3-redis

r = redis.Redis(port=int(sys.argv[1]))
ts = []
for i in range(200):
    r.execute_command('RL.FIXED', f'w{i}', 10, '1m')
    t = time.perf_counter()
    n = r.execute_command('WAIT', 1, 1000)
    ts.append((time.perf_counter() - t) * 1e3)
    assert n == 1, n
ts.sort()
print("WAIT 1 1000 after a write, ms: p50 %.2f p90 %.2f max %.2f" % (ts[100], ts[180], ts[-1]))
