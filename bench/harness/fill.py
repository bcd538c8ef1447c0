#!/usr/bin/env python3
"""Commands to fill a keyspace, for memory.sh.

  fill.py LINE KEYS HITS            RESP for `redis-cli --pipe`: HITS passes over keys
                                    0..KEYS-1, round-robin (a key's hits are spread over
                                    the whole fill, as real traffic spreads them)
  fill.py --sample LINE KEYS COUNT  `MEMORY USAGE <key> SAMPLES 0` for COUNT of those keys
                                    (seeded, so every run samples the same ones)

LINE is a command line with __rand_int__ in its key, which becomes the key's index in 12
zero-padded digits, as redis-benchmark -r writes it. At most 50,000,000 commands.
"""
import random
import sys

PLACEHOLDER = "__rand_int__"


def bulk(word):
    return b"$%d\r\n%s\r\n" % (len(word), word)


def fill(line, keys, hits):
    words = [w.encode() for w in line.split()]
    head = b"*%d\r\n" % len(words)
    # Each word is either fixed bytes or a key template split at the placeholder.
    parts = [w.split(PLACEHOLDER.encode()) if PLACEHOLDER.encode() in w else bulk(w) for w in words]
    out = sys.stdout.buffer
    batch = []
    for _ in range(hits):
        for i in range(keys):
            index = b"%012d" % i
            cmd = [head]
            for p in parts:
                cmd.append(bulk(index.join(p)) if isinstance(p, list) else p)
            batch.append(b"".join(cmd))
            if len(batch) == 8192:
                out.write(b"".join(batch))
                batch = []
    out.write(b"".join(batch))
    out.flush()


def sample(line, keys, count):
    key = next(w for w in line.split() if PLACEHOLDER in w)
    for i in random.Random(42).sample(range(keys), min(count, keys)):
        print("MEMORY USAGE %s SAMPLES 0" % key.replace(PLACEHOLDER, "%012d" % i))


def main(argv):
    if len(argv) == 5 and argv[1] == "--sample":
        return sample(argv[2], int(argv[3]), int(argv[4]))
    if len(argv) != 4:
        sys.exit(__doc__)
    keys, hits = int(argv[2]), int(argv[3])
    if keys < 1 or hits < 1 or keys * hits > 50_000_000:
        sys.exit("fill.py: KEYS x HITS must be between 1 and 50,000,000")
    fill(argv[1], keys, hits)


if __name__ == "__main__":
    main(sys.argv)
