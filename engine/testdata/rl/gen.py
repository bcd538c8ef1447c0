#!/usr/bin/env python3
"""Independent reference oracle for RL.FIXED, RL.LOG, RL.SLIDE and RL.BUCKET, and the
generator of the data-driven transcripts in this directory.

    python3 gen.py            rewrites the *.txt files it owns (deterministic), then replays
                              them through check.py (an independent model)
    python3 gen.py --check    regenerates in memory and fails if a file differs
    python3 gen.py --out DIR  writes the files into DIR instead (which must exist), then
                              replays them; engine/gen_test.go compares them with these

Standard library only; exact arithmetic with int and fractions.Fraction (no floats, except
for the small CL.THROTTLE model, which copies redis-cell's own float steps).

How the oracle is built (see docs/algorithms.md at the repository root):
  * each algorithm is a set of pure functions on an immutable state: admit(st, p, t, cost),
    apply(st, p, t, cost) (an admitted write), fresh(st, p, t), expiry(st) (the instant the
    key stops existing, under the parameters it was written with);
  * remaining is computed in closed form and, whenever limit <= SIM_CAP, also by simulating
    cost-1 requests one after another on a copy; both must agree;
  * retry_after and reset_after are found by an exact integer-ns search over the wait d
    (binary search of a predicate that is checked to be monotone by probes) and are also
    computed in closed form; both must agree, then they are rounded up to whole ms;
  * the worst-case streams of docs/algorithms.md are replayed and their admitted/peak counts
    asserted against the table of the spec.
"""

import argparse
import os
import random
import sys
from collections import namedtuple
from fractions import Fraction
from math import ceil, floor

START = 1_700_000_000_000_000_000          # the manual clock's start, ns (a whole second)
MS = 10 ** 6
SEC = 10 ** 9
I64MAX = 2 ** 63 - 1
SIM_CAP = 200                               # simulate `remaining` when limit <= this
WRONGTYPE = "-WRONGTYPE Operation against a key holding the wrong kind of value"
HERE = os.path.dirname(os.path.abspath(__file__))

UNITS = [("ms", MS), ("s", SEC), ("m", 60 * SEC), ("h", 3600 * SEC), ("d", 86400 * SEC)]
MAX_PERIOD = 3650 * 86400 * SEC


def parse_period(s):
    """'1500ms', '60s', '5m', '1h', '1d', bare integer = seconds -> ns."""
    for unit, mult in UNITS:                # 'ms' is tried before 's' and 'm'
        if s.endswith(unit) and s[: -len(unit)].isdigit():
            v = int(s[: -len(unit)]) * mult
            break
    else:
        assert s.isdigit(), s
        v = int(s) * SEC
    assert MS <= v <= MAX_PERIOD, s
    return v


def ms_up(d):
    """A non-negative wait in ns (int or Fraction) -> whole ms rounded up, saturated."""
    d = Fraction(d)
    assert d >= 0
    return min(ceil(d / MS), I64MAX)


def align_up(t, w):
    return -(-t // w) * w


# ----------------------------------------------------------------------------------------
# The four algorithms. p = parsed parameters; the first element is always the limit.

FixedSt = namedtuple("FixedSt", "S count W")        # window start, count, window written with
LogSt = namedtuple("LogSt", "entries W")            # entries: tuple of (t, n) ascending t
SlideSt = namedtuple("SlideSt", "S cur prev W")
BucketSt = namedtuple("BucketSt", "T")              # T: Fraction ns when full again, or None


class Fixed:
    name, cmd = "fixed", "RL.FIXED"
    FRESH = FixedSt(None, 0, None)

    @staticmethod
    def parse(args):
        assert len(args) == 2
        return (int(args[0]), parse_period(args[1]))

    @staticmethod
    def count(st, W, t):
        return st.count if st.S is not None and st.S == t // W * W else 0

    @classmethod
    def admit(cls, st, p, t, cost):
        limit, W = p
        return cls.count(st, W, t) + cost <= limit

    @classmethod
    def apply(cls, st, p, t, cost):
        limit, W = p
        return FixedSt(t // W * W, cls.count(st, W, t) + cost, W)

    @classmethod
    def fresh(cls, st, p, t):
        return cls.count(st, p[1], t) == 0

    @staticmethod
    def expiry(st):
        return None if st.count == 0 else st.S + st.W

    @classmethod
    def remaining(cls, st, p, t):
        return max(0, p[0] - cls.count(st, p[1], t))

    @staticmethod
    def horizon(st, p, t):
        return p[1]

    @staticmethod
    def retry_closed(st, p, t, cost):
        W = p[1]
        return t // W * W + W - t

    @classmethod
    def reset_closed(cls, st, p, t):
        W = p[1]
        return t // W * W + W - t if cls.count(st, W, t) > 0 else 0


class Log:
    name, cmd = "log", "RL.LOG"
    FRESH = LogSt((), None)

    parse = Fixed.parse

    @staticmethod
    def live(st, W, t):
        return [(ti, n) for (ti, n) in st.entries if ti > t - W]

    @classmethod
    def count(cls, st, W, t):
        return sum(n for _, n in cls.live(st, W, t))

    @classmethod
    def admit(cls, st, p, t, cost):
        return cls.count(st, p[1], t) + cost <= p[0]

    @classmethod
    def apply(cls, st, p, t, cost):
        # entries that are gone under the window of this (admitted) call are dropped for good
        e = cls.live(st, p[1], t)
        if e and e[-1][0] == t:
            e[-1] = (t, e[-1][1] + cost)
        else:
            e.append((t, cost))
        return LogSt(tuple(e), p[1])

    @classmethod
    def fresh(cls, st, p, t):
        return cls.count(st, p[1], t) == 0

    @staticmethod
    def expiry(st):
        return st.entries[-1][0] + st.W if st.entries else None

    @classmethod
    def remaining(cls, st, p, t):
        return max(0, p[0] - cls.count(st, p[1], t))

    @staticmethod
    def horizon(st, p, t):
        return p[1]

    @classmethod
    def retry_closed(cls, st, p, t, cost):
        limit, W = p
        live = cls.live(st, W, t)
        k = sum(n for _, n in live) - (limit - cost)   # this many units must expire
        acc = 0
        for ti, n in live:
            acc += n
            if acc >= k:
                return ti + W - t
        raise AssertionError("unreachable")

    @classmethod
    def reset_closed(cls, st, p, t):
        live = cls.live(st, p[1], t)
        return live[-1][0] + p[1] - t if live else 0


class Slide:
    name, cmd = "slide", "RL.SLIDE"
    FRESH = SlideSt(None, 0, 0, None)

    parse = Fixed.parse

    @staticmethod
    def roll(st, W, t):
        C = t // W * W
        if st.S is not None and st.S == C:
            return C, st.cur, st.prev
        if st.S is not None and st.S == C - W:
            return C, 0, st.cur
        return C, 0, 0

    @classmethod
    def estimate(cls, st, W, t):
        C, cur, prev = cls.roll(st, W, t)
        return Fraction(prev * (W - (t - C)), W) + cur

    @classmethod
    def admit(cls, st, p, t, cost):
        limit, W = p
        C, cur, prev = cls.roll(st, W, t)
        e = t - C
        return prev * (W - e) + cur * W < (limit - cost + 1) * W

    @classmethod
    def apply(cls, st, p, t, cost):
        W = p[1]
        C, cur, prev = cls.roll(st, W, t)
        return SlideSt(C, cur + cost, prev, W)

    @classmethod
    def fresh(cls, st, p, t):
        C, cur, prev = cls.roll(st, p[1], t)
        return cur == 0 and prev == 0

    @staticmethod
    def expiry(st):
        if st.S is None:
            return None
        assert st.cur > 0
        return st.S + 2 * st.W

    @classmethod
    def remaining(cls, st, p, t):
        return max(0, ceil(p[0] - cls.estimate(st, p[1], t)))

    @staticmethod
    def horizon(st, p, t):
        return 2 * p[1]

    @classmethod
    def retry_closed(cls, st, p, t, cost):
        limit, W = p
        C, cur, prev = cls.roll(st, W, t)
        e = t - C
        L1 = limit - cost + 1
        assert L1 >= 1
        if cur < L1:
            # within this window: prev*(W-e-d) < (L1-cur)*W
            assert prev > 0
            x = W - e - Fraction((L1 - cur) * W, prev)
            return min(floor(x) + 1, W - e)
        # next window, e2 = elapsed there: cur*(W-e2) < L1*W
        e2 = floor(W - Fraction(L1 * W, cur)) + 1
        return C + W + e2 - t

    @classmethod
    def reset_closed(cls, st, p, t):
        W = p[1]
        C, cur, prev = cls.roll(st, W, t)
        if cur > 0:
            return C + 2 * W - t
        if prev > 0:
            return C + W - t
        return 0


class Bucket:
    name, cmd = "bucket", "RL.BUCKET"
    FRESH = BucketSt(None)

    @staticmethod
    def parse(args):
        assert len(args) == 3
        cap, rate, period = int(args[0]), int(args[1]), parse_period(args[2])
        assert cap >= 0 and rate >= 1
        return (cap, rate, period)

    @staticmethod
    def tokens(st, p, t):
        cap, rate, period = p
        if st.T is None or st.T <= t:
            return Fraction(cap)
        return cap - (st.T - t) * rate / period

    @classmethod
    def admit(cls, st, p, t, cost):
        return cls.tokens(st, p, t) >= cost

    @staticmethod
    def apply(st, p, t, cost):
        cap, rate, period = p
        base = t if st.T is None or st.T < t else st.T
        return BucketSt(base + Fraction(cost * period, rate))

    @staticmethod
    def fresh(st, p, t):
        return st.T is None or st.T <= t

    @staticmethod
    def expiry(st):
        return st.T

    @classmethod
    def remaining(cls, st, p, t):
        return max(0, floor(cls.tokens(st, p, t)))

    @staticmethod
    def horizon(st, p, t):
        return 0 if st.T is None or st.T <= t else ceil(st.T - t)

    @staticmethod
    def retry_closed(st, p, t, cost):
        cap, rate, period = p
        return ceil(st.T - t - Fraction((cap - cost) * period, rate))

    @staticmethod
    def reset_closed(st, p, t):
        return 0 if st.T is None or st.T <= t else ceil(st.T - t)


ALGS = {a.name: a for a in (Fixed, Log, Slide, Bucket)}

PROBE_RNG = random.Random(12345)   # only for the monotonicity probes, never for output


def search(pred, hi):
    """Smallest integer d in [0, hi] with pred(d), given pred monotone; checked by probes."""
    assert pred(hi), "predicate false at the horizon"
    lo = 0
    if pred(0):
        return 0
    while hi - lo > 1:                      # pred(lo) false, pred(hi) true
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    d = hi
    probes = {0, d - 1, d, d + 1, 2 * d + 1}
    probes |= {PROBE_RNG.randrange(0, d) for _ in range(4)}
    probes |= {d + PROBE_RNG.randrange(0, d + 10) for _ in range(4)}
    for x in probes:
        if x >= 0:
            assert pred(x) == (x >= d), ("not monotone", x, d)
    return d


class Ambiguous(Exception):
    pass


Decision = namedtuple("Decision", "reply after wrote retry_ns reset_ns ambiguous")


def decide(alg, st, stored_exp, p, now, cost):
    """One request. st: state in effect (alg.FRESH when the key does not exist);
    stored_exp: the instant the existing key expires (None when it does not exist)."""
    limit = p[0]
    adm = alg.admit(st, p, now, cost)
    wrote = adm and cost > 0
    after = alg.apply(st, p, now, cost) if wrote else st

    rem = alg.remaining(after, p, now)
    assert 0 <= rem <= max(limit, 0)
    if limit <= SIM_CAP:
        s, k = after, 0
        while k <= limit + 1 and alg.admit(s, p, now, 1):
            s = alg.apply(s, p, now, 1)
            k += 1
        assert k == rem, ("remaining: simulation", k, "closed form", rem)

    def expired_at(exp, t):
        return exp is not None and t >= exp

    ambiguous = False
    if adm:
        retry, retry_ns = -1, None
    elif cost > limit:
        retry, retry_ns = -1, None
        hz = alg.horizon(st, p, now)
        for d in (0, hz, 3 * hz + 7, 10 ** 19):
            assert not alg.admit(st, p, now + d, cost)
            assert not alg.admit(alg.FRESH, p, now + d, cost)
    else:
        hz = alg.horizon(st, p, now)
        ra = search(lambda d: alg.admit(st, p, now + d, cost), hz)
        rb = search(lambda d: expired_at(stored_exp, now + d)
                    or alg.admit(st, p, now + d, cost), hz)
        assert ra >= 1
        assert ra == alg.retry_closed(st, p, now, cost), ("retry", ra, alg.retry_closed(st, p, now, cost))
        retry, retry_ns = ms_up(rb), rb
        ambiguous |= ms_up(ra) != ms_up(rb)

    after_exp = alg.expiry(after) if wrote else stored_exp
    hz = alg.horizon(after, p, now)
    fa = search(lambda d: alg.fresh(after, p, now + d), hz)
    fb = search(lambda d: expired_at(after_exp, now + d) or alg.fresh(after, p, now + d), hz)
    assert fa == alg.reset_closed(after, p, now), ("reset", fa, alg.reset_closed(after, p, now))
    if wrote:
        assert fa == fb and after_exp == now + fa or (alg is Bucket and ceil(after_exp - now) == fa)
    ambiguous |= ms_up(fa) != ms_up(fb)
    reply = (0 if adm else 1, limit, rem, retry, ms_up(fb))
    return Decision(reply, after, wrote, retry_ns, fb, ambiguous)


# ----------------------------------------------------------------------------------------
# A tiny model of CL.THROTTLE (docs/cl-throttle.md section 6), positive arguments only: enough
# to create keys of the other type and to see them expire.

def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _secs(d):
    s = _trunc_div(d, SEC)
    r = d - s * SEC
    return int(float(s) + float(r) / 1e9) + (1 if _trunc_div(r, MS) > 0 else 0)


def cl_throttle(entry, now, B, C, P, Q):
    assert B >= 0 and C >= 1 and P >= 1 and Q >= 1
    EI = int(float(P * SEC) / float(C))
    assert EI >= 1000
    L = B + 1
    DVT, INC = EI * L, EI * Q
    TAT0 = entry[1] if entry else now
    NEW = max(now, TAT0) + INC
    DIFF = now - (NEW - DVT)
    new_entry = entry
    if DIFF < 0:
        limited, RETRY, TTL = 1, (-DIFF if INC <= DVT else -SEC), TAT0 - now
    else:
        limited, RETRY, TTL = 0, -SEC, NEW - now
        new_entry = ("cl", NEW, now // MS + TTL // MS)
    NEXT = DVT - TTL
    REM = 0
    if NEXT > -EI:
        REM = int(float(_trunc_div(NEXT, 1000)) / float(_trunc_div(EI, 1000)))
    return (limited, L, REM, _secs(RETRY), _secs(TTL)), new_entry


# ----------------------------------------------------------------------------------------
# Transcript writer: keeps the server model (keys, clock) and the output lines.

class Transcript:
    def __init__(self, name, header):
        self.name = name
        self.now = START
        self.keys = {}          # key -> ("rl", alg, state) | ("cl", tat, expiry_ms)
        self.lines = ["# " + h if h else "#" for h in header]
        self.lines.append("# Generated by gen.py (python3 gen.py); do not edit by hand.")
        self.lines.append("# The manual clock starts at %dns." % START)

    # -- output helpers
    def comment(self, text):
        for line in text.split("\n"):
            self.lines.append("# " + line if line else "#")

    def blank(self):
        if self.lines and self.lines[-1] != "":
            self.lines.append("")

    def emit(self, cmd, reply):
        self.lines.append("> " + cmd)
        self.lines.append(reply)

    def clock(self, t, force=True):
        assert t >= self.now, "the clock only moves forward"
        if t == self.now and not force:
            return
        self.now = t
        self.emit("DEBUG CLOCK SET %dns" % t, "+OK")

    # -- model
    def _expiry(self, entry):
        if entry[0] == "rl":
            return entry[1].expiry(entry[2])
        return None

    def lookup(self, key):
        e = self.keys.get(key)
        if e is None:
            return None
        if e[0] == "rl":
            exp = e[1].expiry(e[2])
            if exp is None or exp <= self.now:
                del self.keys[key]
                return None
        else:
            if self.now // MS > e[2]:
                del self.keys[key]
                return None
        return e

    def peek_rl(self, alg_name, key, args, cost=1):
        """Decision without emitting or changing anything (None on WRONGTYPE)."""
        alg = ALGS[alg_name]
        e = self.lookup(key)
        if e is not None and (e[0] != "rl" or e[1] is not alg):
            return None
        st = e[2] if e else alg.FRESH
        stored_exp = alg.expiry(st) if e else None
        return decide(alg, st, stored_exp, alg.parse(args), self.now, cost)

    def rl(self, alg_name, key, *args, cost=None, expect=None, allow_ambiguous=False):
        alg = ALGS[alg_name]
        args = [str(a) for a in args]
        cmd = " ".join([alg.cmd, key] + args + (["COST", str(cost)] if cost is not None else []))
        e = self.lookup(key)
        if e is not None and (e[0] != "rl" or e[1] is not alg):
            self.emit(cmd, WRONGTYPE)
            assert expect is None or expect == "WRONGTYPE", (cmd, expect)
            return None
        d = self.peek_rl(alg_name, key, args, 1 if cost is None else cost)
        if d.ambiguous and not allow_ambiguous:
            raise Ambiguous(cmd)
        if d.wrote:
            self.keys[key] = ("rl", alg, d.after)
        self.emit(cmd, "[%s]" % " ".join(str(x) for x in d.reply))
        if expect is not None:
            assert list(d.reply) == list(expect), (self.name, cmd, d.reply, expect)
        return d

    def cl(self, key, B, C, P, Q=None, expect=None):
        cmd = "CL.THROTTLE %s %d %d %d" % (key, B, C, P) + ("" if Q is None else " %d" % Q)
        e = self.lookup(key)
        if e is not None and e[0] != "cl":
            self.emit(cmd, WRONGTYPE)
            assert expect is None or expect == "WRONGTYPE"
            return None
        reply, ne = cl_throttle(e, self.now, B, C, P, 1 if Q is None else Q)
        if ne is not None:
            self.keys[key] = ne
        self.emit(cmd, "[%s]" % " ".join(str(x) for x in reply))
        if expect is not None:
            assert list(reply) == list(expect), (cmd, reply, expect)
        return reply

    def pttl_value(self, key):
        e = self.lookup(key)
        if e is None:
            return -2
        if e[0] == "cl":
            return e[2] - self.now // MS
        return ms_up(e[1].expiry(e[2]) - self.now)

    def pttl(self, key, expect=None):
        v = self.pttl_value(key)
        self.emit("PTTL " + key, str(v))
        assert expect is None or v == expect, (self.name, "PTTL", key, v, expect)
        return v

    def type(self, key, expect=None):
        e = self.lookup(key)
        v = "none" if e is None else ("string" if e[0] == "cl" else e[1].name)
        self.emit("TYPE " + key, "+" + v)
        assert expect is None or v == expect, (key, v, expect)

    def exists(self, key, expect=None):
        v = 0 if self.lookup(key) is None else 1
        self.emit("EXISTS " + key, str(v))
        assert expect is None or v == expect, (key, v, expect)

    def text(self):
        while self.lines and self.lines[-1] == "":
            self.lines.pop()
        return "\n".join(self.lines) + "\n"


# ----------------------------------------------------------------------------------------
# Worst-case streams (docs/algorithms.md): limit 10 per 1000 ms; bucket capacity 10, 10 per 1 s.

def stream_times_ms(which):
    if which == "A":
        return [900 + 10 * i for i in range(10)] + [1000 + 10 * i for i in range(10)]
    if which == "B":
        return [round(Fraction(i * 1000, 30)) for i in range(300)]
    if which == "C":
        return [100 * i for i in range(100)]
    if which == "D":
        return list(range(900, 2899, 2))
    raise ValueError(which)


SPEC_TABLE = {  # algorithm -> {stream: (admitted, peak)}, copied from docs/algorithms.md
    "fixed": {"A": (20, 20), "B": (100, 10), "C": (100, 10), "D": (30, 20)},
    "log": {"A": (10, 10), "B": (100, 10), "C": (100, 10), "D": (20, 10)},
    "slide": {"A": (11, 11), "B": (100, 10), "C": (95, 10), "D": (29, 19)},
    "bucket": {"A": (11, 11), "B": (109, 19), "C": (100, 10), "D": (29, 19)},
}
STREAM_ARGS = {"fixed": ("10", "1000ms"), "log": ("10", "1000ms"), "slide": ("10", "1000ms"),
               "bucket": ("10", "10", "1s")}
STREAM_DESC = {
    "A": "A boundary burst: 10 requests at 900,910,...,990 ms then 10 at 1000,...,1090 ms",
    "B": "B flood: 300 requests at round(i*1000/30) ms, i = 0..299 (30 rps for 10 s)",
    "C": "C compliant: 100 requests at i*100 ms, i = 0..99",
    "D": "D back-loaded: one request every 2 ms from 900 to 2898 ms inclusive",
}


def peak(times_ns, span=1000 * MS):
    best = 0
    j = 0
    ts = sorted(times_ns)
    for i in range(len(ts)):            # half-open [ts[i], ts[i] + span)
        while j < len(ts) and ts[j] < ts[i] + span:
            j += 1
        best = max(best, j - i)
    return best


def run_stream(tr, alg, which, key, origin, args, expected=None):
    assert origin % SEC == 0
    tr.blank()
    tr.comment("Stream %s, origin %dns (window-aligned): %s %s %s" % (
        STREAM_DESC[which], origin, ALGS[alg].cmd, key, " ".join(args)))
    admitted = []
    for ms in stream_times_ms(which):
        t = origin + ms * MS
        tr.clock(t)
        d = tr.rl(alg, key, *args)
        if d.reply[0] == 0:
            admitted.append(t)
    n, pk = len(admitted), peak(admitted)
    tr.comment("stream %s on %s: admitted %d, peak %d in any 1000 ms" % (which, alg, n, pk))
    if expected is not None:
        assert (n, pk) == expected, (alg, which, (n, pk), expected)
    return n, pk


def gen_streams(alg):
    files = {}
    tr = Transcript("streams_%s" % alg, [
        "Worst-case streams A, B, C of algorithms.md for %s %s (each on a fresh key)."
        % (ALGS[alg].cmd, " ".join(STREAM_ARGS[alg])),
        "Admitted/peak counts are asserted by gen.py against the table of algorithms.md."])
    origin = START + 10 * SEC
    for which in "ABC":
        run_stream(tr, alg, which, "s" + which, origin, STREAM_ARGS[alg], SPEC_TABLE[alg][which])
        origin += 20 * SEC
    files["streams_%s" % alg] = tr
    tr = Transcript("stream_d_%s" % alg, [
        "Worst-case stream D of algorithms.md for %s %s (1000 requests, so a file of its own)."
        % (ALGS[alg].cmd, " ".join(STREAM_ARGS[alg])),
        "Admitted/peak counts are asserted by gen.py against the table of algorithms.md."])
    run_stream(tr, alg, "D", "sD", START + 10 * SEC, STREAM_ARGS[alg], SPEC_TABLE[alg]["D"])
    files["stream_d_%s" % alg] = tr
    return files


def gen_no_flooring():
    tr = Transcript("bucket_no_flooring", [
        "Token bucket without flooring (algorithms.md): capacity 10, rate 5 per 1 s, one",
        "request every 20 ms for 10 s (500 requests) admits exactly 59 = 5 x 10 + 10 - 1."])
    origin = START + 10 * SEC
    tr.blank()
    admitted = 0
    for i in range(500):
        tr.clock(origin + i * 20 * MS)
        d = tr.rl("bucket", "nf", 10, 5, "1s")
        admitted += d.reply[0] == 0
    tr.comment("admitted %d of 500" % admitted)
    assert admitted == 59, admitted
    return tr


# ----------------------------------------------------------------------------------------
# Hand-designed scenarios.

W1 = SEC


def gen_fixed():
    tr = Transcript("fixed", ["RL.FIXED: boundaries to the ns, costs, limit 0, parameter changes,",
                              "expiry (PTTL/EXISTS/TYPE), units, huge values."])
    T0 = align_up(START + 1, 10 * SEC) + 10 * SEC        # 1700000020 s, aligned to 10 s
    tr.blank()
    tr.comment("Basic: limit 10 per 1 s; the window [T0, T0+1s) with T0 = %dns" % T0)
    tr.clock(T0 + 900 * MS)
    tr.rl("fixed", "f1", 10, "1s", expect=[0, 10, 9, -1, 100])
    tr.pttl("f1", 100)
    tr.type("f1", "fixed")
    tr.exists("f1", 1)
    for i in range(8):
        tr.rl("fixed", "f1", 10, "1s")
    tr.rl("fixed", "f1", 10, "1s", expect=[0, 10, 0, -1, 100])
    tr.rl("fixed", "f1", 10, "1s", expect=[1, 10, 0, 100, 100])
    tr.comment("COST 0 on a full window is admitted (0 + count <= limit) and changes nothing")
    tr.rl("fixed", "f1", 10, "1s", cost=0, expect=[0, 10, 0, -1, 100])
    tr.comment("1 ns before the window ends: still rejected, retry/reset 1 ns -> 1 ms")
    tr.clock(T0 + W1 - 1)
    tr.rl("fixed", "f1", 10, "1s", expect=[1, 10, 0, 1, 1])
    tr.pttl("f1", 1)
    tr.exists("f1", 1)
    tr.comment("At the boundary the key is gone (fresh) and a new window starts")
    tr.clock(T0 + W1)
    tr.exists("f1", 0)
    tr.pttl("f1", -2)
    tr.type("f1", "none")
    tr.rl("fixed", "f1", 10, "1s", expect=[0, 10, 9, -1, 1000])
    tr.clock(T0 + W1 + 1)
    tr.rl("fixed", "f1", 10, "1s", expect=[0, 10, 8, -1, 1000])
    tr.pttl("f1", 1000)
    tr.clock(T0 + W1 + 1 + MS // 2)
    tr.comment("PTTL rounds up: 999.499999 ms -> 1000")
    tr.pttl("f1", 1000)
    tr.clock(T0 + W1 + 1 * MS)
    tr.pttl("f1", 999)
    tr.clock(T0 + 2 * W1 - MS - 1)
    tr.pttl("f1", 2)

    T1 = T0 + 10 * SEC
    tr.blank()
    tr.comment("Costs: above the limit (retry -1, nothing created), equal to it, COST 0")
    tr.clock(T1 + 250 * MS)
    tr.rl("fixed", "f2", 10, "1s", cost=11, expect=[1, 10, 10, -1, 0])
    tr.exists("f2", 0)
    tr.rl("fixed", "f2", 10, "1s", cost=0, expect=[0, 10, 10, -1, 0])
    tr.exists("f2", 0)
    tr.pttl("f2", -2)
    tr.rl("fixed", "f2", 10, "1s", cost=3, expect=[0, 10, 7, -1, 750])
    tr.rl("fixed", "f2", 10, "1s", cost=0, expect=[0, 10, 7, -1, 750])
    tr.rl("fixed", "f2", 10, "1s", cost=8, expect=[1, 10, 7, 750, 750])
    tr.rl("fixed", "f2", 10, "1s", cost=11, expect=[1, 10, 7, -1, 750])
    tr.rl("fixed", "f2", 10, "1s", cost=7, expect=[0, 10, 0, -1, 750])
    tr.rl("fixed", "f2", 10, "1s", cost=1, expect=[1, 10, 0, 750, 750])
    tr.clock(T1 + 250 * MS + 1)
    tr.comment("retry 749.999999 ms rounds up to 750")
    tr.rl("fixed", "f2", 10, "1s", cost=1, expect=[1, 10, 0, 750, 750])
    tr.clock(T1 + W1)
    tr.rl("fixed", "f3", 10, "1s", cost=10, expect=[0, 10, 0, -1, 1000])
    tr.rl("fixed", "f3", 10, "1s", cost=0, expect=[0, 10, 0, -1, 1000])
    tr.rl("fixed", "f3", 10, "1s", cost=10, expect=[1, 10, 0, 1000, 1000])

    tr.blank()
    tr.comment("Limit 0: every cost >= 1 is rejected for good; COST 0 is admitted; no key")
    tr.rl("fixed", "z", 0, "1s", expect=[1, 0, 0, -1, 0])
    tr.rl("fixed", "z", 0, "1s", cost=0, expect=[0, 0, 0, -1, 0])
    tr.exists("z", 0)

    T2 = T1 + 10 * SEC              # aligned to 10 s (hence to 2 s)
    tr.blank()
    tr.comment("Parameter changes: limit up, limit down (then even COST 0 is rejected)")
    tr.clock(T2 + 100 * MS)
    tr.rl("fixed", "p", 5, "1s", cost=5, expect=[0, 5, 0, -1, 900])
    tr.rl("fixed", "p", 5, "1s", expect=[1, 5, 0, 900, 900])
    tr.rl("fixed", "p", 8, "1s", expect=[0, 8, 2, -1, 900])
    tr.rl("fixed", "p", 3, "1s", cost=0, expect=[1, 3, 0, 900, 900])
    tr.rl("fixed", "p", 3, "1s", expect=[1, 3, 0, 900, 900])
    tr.rl("fixed", "p", 3, "1s", cost=4, expect=[1, 3, 0, -1, 900])
    tr.rl("fixed", "p", 6, "1s", cost=0, expect=[0, 6, 0, -1, 900])
    tr.rl("fixed", "p", 7, "1s", cost=0, expect=[0, 7, 1, -1, 900])
    tr.comment("Window 1s -> 2s while T2 (a multiple of 2 s) is still the window start:")
    tr.comment("the count (6) is kept, and the admitted write moves the expiry to T2+2s")
    tr.rl("fixed", "p", 10, "2s", expect=[0, 10, 3, -1, 1900])
    tr.pttl("p", 1900)
    tr.clock(T2 + 1500 * MS)
    tr.comment("Window 2s -> 500ms: the current 500 ms window starts at T2+1.5s != T2: count 0")
    tr.rl("fixed", "p", 10, "500ms", cost=0, expect=[0, 10, 10, -1, 0])
    tr.comment("(the peek changed nothing: the key still holds the 2 s window)")
    tr.pttl("p", 500)
    tr.rl("fixed", "p", 10, "2s", cost=0, expect=[0, 10, 3, -1, 500])
    tr.rl("fixed", "p", 10, "500ms", cost=2, expect=[0, 10, 8, -1, 500])
    tr.pttl("p", 500)
    tr.clock(T2 + 1700 * MS)
    tr.comment("Back to 2 s: the stored window start T2+1.5s is not a 2 s window start: count 0")
    tr.rl("fixed", "p", 10, "2s", expect=[0, 10, 9, -1, 300])
    tr.comment("Window 2s -> 1s (T2+1s is the current 1 s window and not T2): count 0")
    tr.rl("fixed", "p", 10, "1s", expect=[0, 10, 9, -1, 300])
    tr.rl("fixed", "p", 10, "1s", expect=[0, 10, 8, -1, 300])
    tr.comment("1 s -> 1500ms: T2+1s is not a multiple of 1.5 s")
    W15 = 1500 * MS
    c15 = (T2 + 1700 * MS) // W15 * W15
    tr.rl("fixed", "p", 10, "1500ms", cost=0, expect=[0, 10, 10, -1, 0])
    tr.rl("fixed", "p", 10, "1500ms", expect=[0, 10, 9, -1, ms_up(c15 + W15 - tr.now)])
    tr.pttl("p", ms_up(c15 + W15 - tr.now))

    T3 = T2 + 10 * SEC
    tr.blank()
    tr.comment("A window that does not divide a second: 7ms (windows aligned to the epoch)")
    t7 = T3 + 3 * MS + 5
    tr.clock(t7)
    c7 = t7 // (7 * MS) * (7 * MS)
    tr.comment("the current 7 ms window started %d ns ago" % (t7 - c7))
    tr.rl("fixed", "w7", 2, "7ms", expect=[0, 2, 1, -1, ms_up(c7 + 7 * MS - t7)])
    tr.rl("fixed", "w7", 2, "7ms", cost=1)
    tr.rl("fixed", "w7", 2, "7ms", cost=1)
    tr.clock(c7 + 7 * MS - 1)
    tr.rl("fixed", "w7", 2, "7ms", expect=[1, 2, 0, 1, 1])
    tr.clock(c7 + 7 * MS)
    tr.exists("w7", 0)
    tr.rl("fixed", "w7", 2, "7ms", expect=[0, 2, 1, -1, 7])

    tr.blank()
    tr.comment("Units; windows are aligned to the epoch, not to the key's first use")
    t = T3 + 20 * SEC
    tr.clock(t)
    for unit in ("60", "60s", "1m", "1h", "1d", "1000ms", "3650d"):
        W = parse_period(unit)
        tr.rl("fixed", "u" + unit, 3, unit, expect=[0, 3, 2, -1, ms_up(t // W * W + W - t)])
        tr.pttl("u" + unit, ms_up(t // W * W + W - t))

    huge_window_cases(tr, "fixed")
    return tr


def huge_window_cases(tr, alg):
    """Huge limits/costs (2^62 and 2^63-1) with windows up to 3650d."""
    L62 = 2 ** 62
    W = parse_period("3650d")
    t = align_up(tr.now + SEC, SEC)
    tr.blank()
    tr.comment("Huge values: limit and cost 2^62 = %d, window 3650d = %d ns" % (L62, W))
    tr.clock(t)
    k = alg[0] + "h1"
    d = tr.rl(alg, k, L62, "3650d", cost=L62)
    assert d.reply[:4] == (0, L62, 0, -1)
    d = tr.rl(alg, k, L62, "3650d", cost=1)
    assert d.reply[0] == 1
    d = tr.rl(alg, k, L62, "3650d", cost=0)
    assert d.reply[0] == 0
    tr.pttl(k)
    tr.rl(alg, alg[0] + "h2", L62, "3650d", cost=1)
    tr.rl(alg, alg[0] + "h2", L62, "3650d", cost=L62 - 1)
    tr.rl(alg, alg[0] + "h2", L62, "3650d", cost=1)
    tr.comment("Limit 2^63-1 (the largest accepted): a sum count + cost does not fit in int64")
    M = I64MAX
    k = alg[0] + "h3"
    tr.rl(alg, k, M, "3650d", cost=M, expect=None)
    tr.rl(alg, k, M, "3650d", cost=M)
    tr.rl(alg, k, M, "3650d", cost=1)
    tr.rl(alg, k, M, "3650d", cost=0)
    tr.rl(alg, alg[0] + "h4", M, "3650d", cost=M - 1)
    tr.rl(alg, alg[0] + "h4", M, "3650d", cost=1)
    tr.rl(alg, alg[0] + "h4", M, "3650d", cost=1)
    tr.rl(alg, alg[0] + "h5", L62, "1ms", cost=L62 // 2)
    tr.rl(alg, alg[0] + "h5", L62, "1ms", cost=L62 // 2 + 1)
    tr.rl(alg, alg[0] + "h5", L62, "1ms", cost=L62 // 2)
    return t


def gen_log():
    tr = Transcript("log", ["RL.LOG: entries expiring exactly at t+W, costs, limit 0, parameter",
                            "changes, expiry (PTTL/EXISTS/TYPE), huge values."])
    T0 = align_up(START + 1, 10 * SEC) + 10 * SEC
    tr.blank()
    tr.comment("limit 3 per 1 s; entries at T0, T0+300ms, T0+600ms (T0 = %dns)" % T0)
    tr.clock(T0)
    tr.rl("log", "l1", 3, "1s", expect=[0, 3, 2, -1, 1000])
    tr.type("l1", "log")
    tr.clock(T0 + 300 * MS)
    tr.rl("log", "l1", 3, "1s", expect=[0, 3, 1, -1, 1000])
    tr.clock(T0 + 600 * MS)
    tr.rl("log", "l1", 3, "1s", expect=[0, 3, 0, -1, 1000])
    tr.pttl("l1", 1000)
    tr.clock(T0 + 900 * MS)
    tr.rl("log", "l1", 3, "1s", expect=[1, 3, 0, 100, 700])
    tr.rl("log", "l1", 3, "1s", cost=2, expect=[1, 3, 0, 400, 700])
    tr.rl("log", "l1", 3, "1s", cost=3, expect=[1, 3, 0, 700, 700])
    tr.rl("log", "l1", 3, "1s", cost=4, expect=[1, 3, 0, -1, 700])
    tr.rl("log", "l1", 3, "1s", cost=0, expect=[0, 3, 0, -1, 700])
    tr.comment("1 ns before the entry at T0 expires, and exactly at T0+W (t <= now - W is gone)")
    tr.clock(T0 + W1 - 1)
    tr.rl("log", "l1", 3, "1s", expect=[1, 3, 0, 1, 601])
    tr.clock(T0 + W1)
    tr.rl("log", "l1", 3, "1s", expect=[0, 3, 0, -1, 1000])
    tr.clock(T0 + W1 + 1)
    tr.rl("log", "l1", 3, "1s", expect=[1, 3, 0, 300, 1000])
    tr.clock(T0 + 1300 * MS)
    tr.rl("log", "l1", 3, "1s", cost=0, expect=[0, 3, 1, -1, 700])
    tr.clock(T0 + 2 * W1 - 1)
    tr.pttl("l1", 1)
    tr.clock(T0 + 2 * W1)
    tr.exists("l1", 0)
    tr.pttl("l1", -2)
    tr.type("l1", "none")

    T1 = T0 + 10 * SEC
    tr.blank()
    tr.comment("Several units per entry: the retry waits for the k-th oldest unit")
    tr.clock(T1)
    tr.rl("log", "l2", 5, "1s", cost=2, expect=[0, 5, 3, -1, 1000])
    tr.clock(T1 + 100 * MS)
    tr.rl("log", "l2", 5, "1s", cost=2, expect=[0, 5, 1, -1, 1000])
    tr.clock(T1 + 200 * MS)
    tr.rl("log", "l2", 5, "1s", cost=1, expect=[0, 5, 0, -1, 1000])
    tr.clock(T1 + 500 * MS)
    tr.rl("log", "l2", 5, "1s", cost=1, expect=[1, 5, 0, 500, 700])
    tr.rl("log", "l2", 5, "1s", cost=2, expect=[1, 5, 0, 500, 700])
    tr.rl("log", "l2", 5, "1s", cost=3, expect=[1, 5, 0, 600, 700])
    tr.rl("log", "l2", 5, "1s", cost=4, expect=[1, 5, 0, 600, 700])
    tr.rl("log", "l2", 5, "1s", cost=5, expect=[1, 5, 0, 700, 700])
    tr.rl("log", "l2", 5, "1s", cost=6, expect=[1, 5, 0, -1, 700])
    tr.clock(T1 + W1)
    tr.rl("log", "l2", 5, "1s", cost=3, expect=[1, 5, 2, 100, 200])
    tr.rl("log", "l2", 5, "1s", cost=2, expect=[0, 5, 0, -1, 1000])
    tr.pttl("l2", 1000)

    tr.blank()
    tr.comment("Cost equal to the limit, above it, limit 0, COST 0 on a fresh key")
    tr.rl("log", "l3", 4, "1s", cost=5, expect=[1, 4, 4, -1, 0])
    tr.rl("log", "l3", 4, "1s", cost=0, expect=[0, 4, 4, -1, 0])
    tr.exists("l3", 0)
    tr.rl("log", "l3", 4, "1s", cost=4, expect=[0, 4, 0, -1, 1000])
    tr.rl("log", "l3", 4, "1s", cost=0, expect=[0, 4, 0, -1, 1000])
    tr.rl("log", "z", 0, "1s", expect=[1, 0, 0, -1, 0])
    tr.rl("log", "z", 0, "1s", cost=0, expect=[0, 0, 0, -1, 0])
    tr.exists("z", 0)

    T2 = T1 + 10 * SEC
    tr.blank()
    tr.comment("Parameter changes")
    tr.clock(T2)
    tr.rl("log", "p", 4, "1s", cost=2, expect=[0, 4, 2, -1, 1000])
    tr.clock(T2 + 400 * MS)
    tr.rl("log", "p", 4, "1s", cost=2, expect=[0, 4, 0, -1, 1000])
    tr.comment("limit up")
    tr.rl("log", "p", 6, "1s", expect=[0, 6, 1, -1, 1000])
    tr.comment("limit down below the live count: even COST 0 is rejected until enough expire")
    tr.clock(T2 + 500 * MS)
    tr.rl("log", "p", 3, "1s", cost=0, expect=[1, 3, 0, 500, 900])
    tr.rl("log", "p", 2, "1s", cost=0, expect=[1, 2, 0, 900, 900])
    tr.rl("log", "p", 2, "1s", cost=2, expect=[1, 2, 0, 900, 900])
    tr.comment("window 1s -> 300ms: the entries of T2 are gone under 300 ms and this")
    tr.comment("admitted write drops them (T2 <= now - 300ms); the entries of T2+400ms remain")
    tr.rl("log", "p", 4, "300ms", expect=[0, 4, 0, -1, 300])
    tr.pttl("p", 300)
    tr.comment("back to 1 s (a write): the dropped entries of T2 do not come back: 3 + 1 + 1 <= 6")
    tr.comment("(were they still counted, 2 + 3 + 1 + 1 > 6 would be rejected)")
    tr.rl("log", "p", 6, "1s", expect=[0, 6, 1, -1, 1000])
    tr.pttl("p", 1000)
    tr.clock(T2 + 650 * MS)
    tr.comment("window 1s -> 200ms: drops the entries of T2+400ms, keeps T2+500ms (2 units)")
    tr.rl("log", "p", 5, "200ms", expect=[0, 5, 2, -1, 200])
    tr.clock(T2 + 800 * MS)
    tr.comment("the entries of T2+500ms are gone under the stored 200 ms window but are still")
    tr.comment("stored (the key lives until T2+850ms): under a 1 s window they count again")
    tr.rl("log", "p", 5, "1s", cost=2, expect=[0, 5, 0, -1, 1000])
    tr.rl("log", "p", 5, "1s", expect=[1, 5, 0, 700, 1000])
    tr.clock(T2 + 900 * MS)
    tr.rl("log", "p", 6, "250ms", expect=[0, 6, 3, -1, 250])
    tr.pttl("p", 250)
    tr.clock(T2 + 1150 * MS)
    tr.exists("p", 0)
    tr.comment("the key expired at T2+1150ms (under its stored 250 ms window): a 1 s window")
    tr.comment("does not bring the entries of T2+800ms back")
    tr.rl("log", "p", 3, "1s", cost=0, expect=[0, 3, 3, -1, 0])

    T3 = T2 + 10 * SEC
    tr.blank()
    tr.comment("Window 7ms; entries one ns apart")
    tr.clock(T3)
    tr.rl("log", "w7", 2, "7ms", expect=[0, 2, 1, -1, 7])
    tr.clock(T3 + 1)
    tr.rl("log", "w7", 2, "7ms", expect=[0, 2, 0, -1, 7])
    tr.rl("log", "w7", 2, "7ms", expect=[1, 2, 0, 7, 7])
    tr.clock(T3 + 7 * MS)
    tr.rl("log", "w7", 2, "7ms", cost=2, expect=[1, 2, 1, 1, 1])
    tr.rl("log", "w7", 2, "7ms", expect=[0, 2, 0, -1, 7])
    tr.clock(T3 + 7 * MS + 1)
    tr.rl("log", "w7", 2, "7ms", cost=0, expect=[0, 2, 1, -1, 7])

    huge_window_cases(tr, "log")
    return tr


def gen_slide():
    tr = Transcript("slide", ["RL.SLIDE: exact estimate boundaries, costs, limit 0, parameter",
                              "changes, expiry (PTTL/EXISTS/TYPE), huge values."])
    T0 = align_up(START + 1, 10 * SEC) + 10 * SEC
    tr.blank()
    tr.comment("limit 10 per 1 s: 10 at the start of window [T0, T0+1s), T0 = %dns" % T0)
    tr.clock(T0)
    for i in range(10):
        tr.rl("slide", "s1", 10, "1s", expect=[0, 10, 9 - i, -1, 2000])
    tr.type("s1", "slide")
    tr.rl("slide", "s1", 10, "1s", expect=[1, 10, 0, 1001, 2000])
    tr.rl("slide", "s1", 10, "1s", cost=0, expect=[0, 10, 0, -1, 2000])
    tr.comment("Until T0+1s: 10 in the window; at T0+1s prev = 10 with weight 1: still rejected;")
    tr.comment("admitted from T0+1s+1ns on (retry 1.000001 s -> 1001 ms above)")
    tr.clock(T0 + W1 - 1)
    tr.rl("slide", "s1", 10, "1s", expect=[1, 10, 0, 1, 1001])
    tr.clock(T0 + W1)
    tr.rl("slide", "s1", 10, "1s", expect=[1, 10, 0, 1, 1000])
    tr.pttl("s1", 1000)
    tr.clock(T0 + W1 + 1)
    tr.rl("slide", "s1", 10, "1s", expect=[0, 10, 0, -1, 2000])
    tr.clock(T0 + W1 + 300 * MS)
    tr.comment("estimate 10*0.7 + 1 = 8: two more fit")
    tr.rl("slide", "s1", 10, "1s", cost=0, expect=[0, 10, 2, -1, 1700])
    tr.rl("slide", "s1", 10, "1s", cost=2, expect=[0, 10, 0, -1, 1700])
    tr.rl("slide", "s1", 10, "1s", expect=[1, 10, 0, 1, 1700])
    tr.rl("slide", "s1", 10, "1s", cost=3, expect=[1, 10, 0, 201, 1700])
    tr.rl("slide", "s1", 10, "1s", cost=10, expect=[1, 10, 0, 1367, 1700])
    tr.rl("slide", "s1", 10, "1s", cost=11, expect=[1, 10, 0, -1, 1700])
    tr.clock(T0 + 3 * W1 - 1)
    tr.pttl("s1", 1)
    tr.clock(T0 + 3 * W1)
    tr.exists("s1", 0)
    tr.pttl("s1", -2)

    T1 = T0 + 10 * SEC
    tr.blank()
    tr.comment("Exact comparison: prev 7, limit 5: admitted iff 7*(W-e) < 5*W iff e > 2W/7")
    tr.comment("(2W/7 = 285714285.71 ns)")
    tr.clock(T1 + 999 * MS)
    tr.rl("slide", "s2", 7, "1s", cost=7, expect=[0, 7, 0, -1, 1001])
    tr.clock(T1 + W1 + 285714285)
    tr.rl("slide", "s2", 5, "1s", expect=[1, 5, 0, 1, 715])
    tr.clock(T1 + W1 + 285714286)
    tr.rl("slide", "s2", 5, "1s", expect=[0, 5, 0, -1, 1715])
    tr.comment("Equality is not enough: prev 5, limit 5, cost 2: 5*(W-e) < 4*W iff e > 200ms")
    tr.clock(T1 + 3 * W1 + 500 * MS)
    tr.rl("slide", "s3", 5, "1s", cost=5, expect=[0, 5, 0, -1, 1500])
    tr.clock(T1 + 4 * W1)
    tr.rl("slide", "s3", 5, "1s", cost=2, expect=[1, 5, 0, 201, 1000])
    tr.clock(T1 + 4 * W1 + 200 * MS)
    tr.rl("slide", "s3", 5, "1s", cost=2, expect=[1, 5, 1, 1, 800])
    tr.clock(T1 + 4 * W1 + 200 * MS + 1)
    tr.rl("slide", "s3", 5, "1s", cost=2, expect=[0, 5, 0, -1, 1800])
    tr.comment("remaining = ceil(limit - estimate): 5 - (5*0.8 - tiny + 2) = -0.99.. -> 0")

    T2 = T1 + 10 * SEC
    tr.blank()
    tr.comment("Costs: above the limit, equal, COST 0 on fresh and used keys, limit 0")
    tr.clock(T2 + 400 * MS)
    tr.rl("slide", "c", 6, "1s", cost=7, expect=[1, 6, 6, -1, 0])
    tr.rl("slide", "c", 6, "1s", cost=0, expect=[0, 6, 6, -1, 0])
    tr.exists("c", 0)
    tr.rl("slide", "c", 6, "1s", cost=6, expect=[0, 6, 0, -1, 1600])
    tr.rl("slide", "c", 6, "1s", cost=0, expect=[0, 6, 0, -1, 1600])
    tr.rl("slide", "c", 6, "1s", cost=6, expect=[1, 6, 0, 1434, 1600])
    tr.clock(T2 + W1 + 500 * MS)
    tr.comment("prev 6 at weight 1/2: estimate 3")
    tr.rl("slide", "c", 6, "1s", cost=0, expect=[0, 6, 3, -1, 500])
    tr.rl("slide", "c", 6, "1s", cost=4, expect=[1, 6, 3, 1, 500])
    tr.rl("slide", "z", 0, "1s", expect=[1, 0, 0, -1, 0])
    tr.rl("slide", "z", 0, "1s", cost=0, expect=[0, 0, 0, -1, 0])
    tr.exists("z", 0)

    T3 = T2 + 10 * SEC       # multiple of 2 s
    tr.blank()
    tr.comment("Parameter changes")
    tr.clock(T3 + 100 * MS)
    tr.rl("slide", "p", 4, "1s", cost=4, expect=[0, 4, 0, -1, 1900])
    tr.comment("limit up and down")
    tr.rl("slide", "p", 6, "1s", expect=[0, 6, 1, -1, 1900])
    tr.rl("slide", "p", 3, "1s", cost=0, expect=[1, 3, 0, 1101, 1900])
    tr.comment("1s -> 2s while T3 is also the current 2 s window: cur 5 kept")
    tr.rl("slide", "p", 8, "2s", expect=[0, 8, 2, -1, 3900])
    tr.pttl("p", 3900)
    tr.clock(T3 + 2 * W1 + 500 * MS)
    tr.comment("2s window [T3+2s, T3+4s): prev = 6 at weight 3/4 = 4.5")
    tr.rl("slide", "p", 8, "2s", cost=0, expect=[0, 8, 4, -1, 1500])
    tr.comment("2s -> 500ms: current 500 ms window starts at T3+2.5s, stored start T3 is neither")
    tr.comment("it nor the previous one: fresh under 500ms")
    tr.rl("slide", "p", 8, "500ms", cost=0, expect=[0, 8, 8, -1, 0])
    tr.rl("slide", "p", 8, "500ms", cost=2, expect=[0, 8, 6, -1, 1000])
    tr.pttl("p", 1000)
    tr.clock(T3 + 3 * W1 + 250 * MS)
    tr.comment("500ms -> 1s: the stored start T3+2.5s is not a 1 s window start: fresh")
    tr.rl("slide", "p", 8, "1s", cost=0, expect=[0, 8, 8, -1, 0])
    tr.rl("slide", "p", 8, "500ms", cost=0, expect=[0, 8, 7, -1, 250])
    tr.rl("slide", "p", 8, "1s", cost=3, expect=[0, 8, 5, -1, 1750])
    tr.clock(T3 + 4 * W1 + 100 * MS)
    tr.comment("1s -> 2s: stored start T3+3s is not a multiple of 2 s: fresh")
    tr.rl("slide", "p", 8, "2s", cost=0, expect=[0, 8, 8, -1, 0])
    W15 = 1500 * MS
    T = align_up(tr.now + 1, 3 * SEC)      # on both the 1 s and the 1.5 s grid
    assert T % W15 == 0 and T >= T3 + 5 * SEC
    tr.clock(T + 100 * MS)
    tr.comment("(the key expired at T3+5s) T = %dns is a multiple of 1 s and of 1.5 s" % T)
    tr.rl("slide", "p", 8, "1s", cost=3, expect=[0, 8, 5, -1, 1900])
    tr.clock(T + 1200 * MS)
    tr.comment("1s -> 1500ms: the current 1.5 s window starts at T, the stored start: cur 3 kept")
    tr.rl("slide", "p", 8, "1500ms", expect=[0, 8, 4, -1, 1800])
    tr.clock(T + 1600 * MS)
    tr.comment("next 1.5 s window: prev 4 at weight 1400/1500: estimate 3.7333")
    tr.rl("slide", "p", 8, "1500ms", cost=0, expect=[0, 8, 5, -1, 1400])
    tr.rl("slide", "p", 8, "1500ms", cost=5, expect=[0, 8, 0, -1, 2900])
    tr.pttl("p", 2900)

    T4 = T3 + 10 * SEC
    tr.blank()
    tr.comment("Window 7ms (not dividing a second), ns boundaries")
    tr.clock(T4)
    c7 = T4 // (7 * MS) * (7 * MS)
    tr.rl("slide", "w7", 3, "7ms", cost=3)
    tr.clock(c7 + 7 * MS - 1)
    tr.rl("slide", "w7", 3, "7ms", cost=1)
    tr.clock(c7 + 7 * MS)
    tr.rl("slide", "w7", 3, "7ms", cost=1)
    tr.clock(c7 + 7 * MS + 1)
    tr.rl("slide", "w7", 3, "7ms", cost=1)
    tr.clock(c7 + 7 * MS + 2333334)
    tr.rl("slide", "w7", 3, "7ms", cost=1)
    tr.rl("slide", "w7", 3, "7ms", cost=0)
    tr.pttl("w7")
    tr.clock(c7 + 21 * MS - 1)
    tr.exists("w7", 1)
    tr.clock(c7 + 21 * MS)
    tr.exists("w7", 0)

    huge_window_cases(tr, "slide")
    L62 = 2 ** 62
    W = parse_period("3650d")
    tr.blank()
    tr.comment("Huge, exact: prev 2^62, cost 2^61, limit 2^62: admitted iff e > W/2 - W/2^62")
    tr.comment("i.e. from e = W/2 = %d ns on" % (W // 2))
    C = align_up(tr.now + 1, W)
    tr.clock(C)
    tr.rl("slide", "sx", L62, "3650d", cost=L62)
    tr.clock(C + W + W // 2 - 1)
    tr.rl("slide", "sx", L62, "3650d", cost=L62 // 2,
          expect=[1, L62, ceil(L62 - Fraction(L62 * (W // 2 + 1), W)), 1, ms_up(W // 2 + 1)])
    tr.clock(C + W + W // 2)
    tr.rl("slide", "sx", L62, "3650d", cost=L62 // 2, expect=[0, L62, 0, -1, ms_up(W + W // 2)])
    tr.pttl("sx", ms_up(W + W // 2))
    return tr


def gen_bucket():
    tr = Transcript("bucket", ["RL.BUCKET: refill to the ns (integer and fractional token intervals),",
                               "costs, capacity 0, parameter changes (T kept), expiry, huge values."])
    T0 = align_up(START + 1, 10 * SEC) + 10 * SEC
    tr.blank()
    tr.comment("capacity 10, 10 per 1 s: one token every 100 ms (T0 = %dns)" % T0)
    tr.clock(T0 + 900 * MS)
    tr.rl("bucket", "b1", 10, 10, "1s", expect=[0, 10, 9, -1, 100])
    tr.pttl("b1", 100)
    tr.type("b1", "bucket")
    tr.rl("bucket", "b1", 10, 10, "1s", cost=9, expect=[0, 10, 0, -1, 1000])
    tr.rl("bucket", "b1", 10, 10, "1s", expect=[1, 10, 0, 100, 1000])
    tr.rl("bucket", "b1", 10, 10, "1s", cost=0, expect=[0, 10, 0, -1, 1000])
    tr.rl("bucket", "b1", 10, 10, "1s", cost=10, expect=[1, 10, 0, 1000, 1000])
    tr.rl("bucket", "b1", 10, 10, "1s", cost=11, expect=[1, 10, 0, -1, 1000])
    tr.comment("1 ns before one token interval: 0.99999999 tokens")
    tr.clock(T0 + 1000 * MS - 1)
    tr.rl("bucket", "b1", 10, 10, "1s", expect=[1, 10, 0, 1, 901])
    tr.clock(T0 + 1000 * MS)
    tr.rl("bucket", "b1", 10, 10, "1s", expect=[0, 10, 0, -1, 1000])
    tr.clock(T0 + 1250 * MS)
    tr.rl("bucket", "b1", 10, 10, "1s", cost=0, expect=[0, 10, 2, -1, 750])
    tr.rl("bucket", "b1", 10, 10, "1s", cost=3, expect=[1, 10, 2, 50, 750])
    tr.clock(T0 + 2000 * MS - 1)
    tr.pttl("b1", 1)
    tr.exists("b1", 1)
    tr.clock(T0 + 2000 * MS)
    tr.exists("b1", 0)
    tr.pttl("b1", -2)

    T1 = T0 + 10 * SEC
    tr.blank()
    tr.comment("Fractional token interval: capacity 3, 3 per 1 s = one token every 333333333.33 ns")
    tr.clock(T1)
    tr.rl("bucket", "b3", 3, 3, "1s", expect=[0, 3, 2, -1, 334])
    tr.clock(T1 + 333333333)
    tr.comment("1/3 ns short of full: the key still exists")
    tr.pttl("b3", 1)
    tr.exists("b3", 1)
    tr.rl("bucket", "b3", 3, 3, "1s", cost=0, expect=[0, 3, 2, -1, 1])
    tr.clock(T1 + 333333334)
    tr.exists("b3", 0)
    tr.rl("bucket", "b3", 3, 3, "1s", cost=3, expect=[0, 3, 0, -1, 1000])
    tr.rl("bucket", "b3", 3, 3, "1s", expect=[1, 3, 0, 334, 1000])
    tr.comment("tokens are never floored: polls 1 ms apart are rejected, each retry 1 ms shorter,")
    tr.comment("and the token arrives 333333333.33 ns after the drain")
    t = tr.now
    for i in range(1, 4):
        tr.clock(t + i * MS)
        tr.rl("bucket", "b3", 3, 3, "1s")
    tr.clock(t + 333333333)
    tr.rl("bucket", "b3", 3, 3, "1s", expect=[1, 3, 0, 1, 667])
    tr.clock(t + 333333334)
    tr.rl("bucket", "b3", 3, 3, "1s", expect=[0, 3, 0, -1, 1000])
    tr.comment("that left 2e-9 tokens: two tokens 666666666 ns later, exactly")
    tr.clock(t + 333333334 + 666666665)
    tr.rl("bucket", "b3", 3, 3, "1s", cost=2, expect=[1, 3, 1, 1, 334])
    tr.clock(t + 333333334 + 666666666)
    tr.rl("bucket", "b3", 3, 3, "1s", cost=2, expect=[0, 3, 0, -1, 1000])

    T2 = T1 + 10 * SEC
    tr.blank()
    tr.comment("Costs above the capacity, equal to it, COST 0 on a fresh key, capacity 0")
    tr.clock(T2)
    tr.rl("bucket", "c", 5, 1, "1s", cost=6, expect=[1, 5, 5, -1, 0])
    tr.rl("bucket", "c", 5, 1, "1s", cost=0, expect=[0, 5, 5, -1, 0])
    tr.exists("c", 0)
    tr.rl("bucket", "c", 5, 1, "1s", cost=5, expect=[0, 5, 0, -1, 5000])
    tr.rl("bucket", "c", 5, 1, "1s", cost=5, expect=[1, 5, 0, 5000, 5000])
    tr.rl("bucket", "c", 5, 1, "1s", cost=0, expect=[0, 5, 0, -1, 5000])
    tr.rl("bucket", "z", 0, 1, "1s", expect=[1, 0, 0, -1, 0])
    tr.rl("bucket", "z", 0, 1, "1s", cost=0, expect=[0, 0, 0, -1, 0])
    tr.exists("z", 0)

    T3 = T2 + 10 * SEC
    tr.blank()
    tr.comment("Parameter changes keep T (the time the bucket is full again)")
    tr.clock(T3)
    tr.rl("bucket", "p", 10, 10, "1s", cost=8, expect=[0, 10, 2, -1, 800])
    tr.comment("capacity up: 20 - 8 = 12 tokens")
    tr.rl("bucket", "p", 20, 10, "1s", cost=0, expect=[0, 20, 12, -1, 800])
    tr.comment("capacity down: 5 - 8 = -3 tokens: even COST 0 waits for 3 tokens (300 ms)")
    tr.rl("bucket", "p", 5, 10, "1s", cost=0, expect=[1, 5, 0, 300, 800])
    tr.rl("bucket", "p", 5, 10, "1s", cost=5, expect=[1, 5, 0, 800, 800])
    tr.rl("bucket", "p", 5, 10, "1s", cost=6, expect=[1, 5, 0, -1, 800])
    tr.comment("rate down: 800 ms of debt at 1 per 1 s is 0.8 tokens: 9.2 tokens")
    tr.rl("bucket", "p", 10, 1, "1s", cost=0, expect=[0, 10, 9, -1, 800])
    tr.rl("bucket", "p", 10, 1, "1s", cost=9, expect=[0, 10, 0, -1, 9800])
    tr.comment("rate up again: 9.8 s of debt at 10 per 1 s = 98 tokens: -88 with capacity 10")
    tr.rl("bucket", "p", 10, 10, "1s", cost=0, expect=[1, 10, 0, 8800, 9800])
    tr.comment("period change 1s -> 1m (rate 10 per minute): 9.8 s of debt = 1.6333 tokens")
    tr.rl("bucket", "p", 10, 10, "1m", cost=0, expect=[0, 10, 8, -1, 9800])
    tr.rl("bucket", "p", 10, 10, "1m", cost=8, expect=[0, 10, 0, -1, 57800])
    tr.rl("bucket", "p", 10, 10, "1m", cost=7, expect=[1, 10, 0, 39800, 57800])
    tr.pttl("p", 57800)
    tr.comment("with rate 7 per 1 s: 57.8 s of debt = 404.6 tokens")
    tr.rl("bucket", "p", 10, 7, "1s", cost=1, expect=[1, 10, 0, 56515, 57800])
    tr.comment("rate 3 per 1 s: 2 s of debt = 6 tokens, and the write adds 1/3 s to T")
    tr.clock(T3 + 57800 * MS - 2 * SEC)
    tr.rl("bucket", "p", 10, 3, "1s", cost=1, expect=[0, 10, 3, -1, 2334])
    tr.clock(T3 + 57800 * MS + 333333333)
    tr.pttl("p", 1)
    tr.rl("bucket", "p", 10, 10, "1s", cost=0, expect=[0, 10, 9, -1, 1])
    tr.clock(T3 + 57800 * MS + 333333334)
    tr.exists("p", 0)

    T4 = T3 + 60 * SEC
    tr.blank()
    tr.comment("Period 7ms with rate 3: one token every 2333333.33 ns")
    tr.clock(T4)
    tr.rl("bucket", "w7", 2, 3, "7ms", cost=2, expect=[0, 2, 0, -1, 5])
    tr.clock(T4 + 2333333)
    tr.rl("bucket", "w7", 2, 3, "7ms", expect=[1, 2, 0, 1, 3])
    tr.clock(T4 + 2333334)
    tr.rl("bucket", "w7", 2, 3, "7ms", expect=[0, 2, 0, -1, 5])
    tr.pttl("w7", 5)
    tr.clock(T4 + 6999999)
    tr.pttl("w7", 1)
    tr.clock(T4 + 7000000)
    tr.pttl("w7", -2)

    T5 = T4 + 10 * SEC
    tr.blank()
    L62 = 2 ** 62
    W = parse_period("3650d")
    tr.comment("Huge: capacity 2^62, 1 per 3650d (%d ns)" % W)
    tr.clock(T5)
    tr.rl("bucket", "bh1", L62, 1, "3650d", expect=[0, L62, L62 - 1, -1, W // MS])
    tr.pttl("bh1", W // MS)
    tr.rl("bucket", "bh1", L62, 1, "3650d", cost=L62, expect=[1, L62, L62 - 1, W // MS, W // MS])
    tr.clock(T5 + MS + 1)
    tr.comment("a drain of 2^24 tokens: T moves by 2^24 x 3650d (still below 2^63-1 ms)")
    tr.rl("bucket", "bh1", L62, 1, "3650d", cost=2 ** 24,
          expect=[0, L62, L62 - 1 - 2 ** 24, -1, (2 ** 24 + 1) * (W // MS) - 1])
    tr.rl("bucket", "bh1", L62, 1, "3650d", cost=L62,
          expect=[1, L62, L62 - 1 - 2 ** 24, (2 ** 24 + 1) * (W // MS) - 1, (2 ** 24 + 1) * (W // MS) - 1])
    tr.rl("bucket", "bh1", L62, 1, "3650d", cost=L62 - 2 ** 24,
          expect=[1, L62, L62 - 1 - 2 ** 24, W // MS - 1, (2 ** 24 + 1) * (W // MS) - 1])
    tr.comment("capacity 2^62, 2^62 per 1ms: one token every 1e6/2^62 ns")
    tr.rl("bucket", "bh2", L62, L62, "1ms", cost=L62, expect=[0, L62, 0, -1, 1])
    tr.rl("bucket", "bh2", L62, L62, "1ms", cost=1, expect=[1, L62, 0, 1, 1])
    tr.clock(tr.now + 1)
    tr.rl("bucket", "bh2", L62, L62, "1ms", cost=1, expect=[0, L62, L62 // MS - 1, -1, 1])
    tr.clock(tr.now + MS - 1)
    tr.comment("1/2^62 of a token short of full after the second write")
    tr.exists("bh2", 1)
    tr.pttl("bh2", 1)
    tr.clock(tr.now + 1)
    tr.exists("bh2", 0)
    tr.comment("capacity 2^62, 1 per 1ms: a full drain takes 2^62 ms (fits in int64)")
    tr.rl("bucket", "bh3", L62, 1, "1ms", cost=L62, expect=[0, L62, 0, -1, L62])
    tr.rl("bucket", "bh3", L62, 1, "1ms", cost=1, expect=[1, L62, 0, 1, L62])
    tr.rl("bucket", "bh3", L62, 1, "1ms", cost=L62, expect=[1, L62, 0, L62, L62])
    tr.comment("The one saturating case: 1 per 2ms, a full drain takes 2^63 ms > 2^63-1")
    tr.rl("bucket", "bh4", L62, 1, "2ms", cost=L62, expect=[0, L62, 0, -1, I64MAX])
    tr.pttl("bh4", I64MAX)
    tr.rl("bucket", "bh4", L62, 1, "2ms", cost=1, expect=[1, L62, 0, 2, I64MAX])
    tr.rl("bucket", "bh4", L62, 1, "2ms", cost=L62, expect=[1, L62, 0, I64MAX, I64MAX])
    tr.comment("capacity and cost 2^63-1")
    tr.rl("bucket", "bh5", I64MAX, 1, "1ms", cost=I64MAX, expect=[0, I64MAX, 0, -1, I64MAX])
    tr.rl("bucket", "bh5", I64MAX, I64MAX, "1ms", cost=I64MAX,
          expect=[1, I64MAX, 0, I64MAX, I64MAX])
    tr.rl("bucket", "bh6", I64MAX, I64MAX, "3650d", cost=I64MAX - 1,
          expect=[0, I64MAX, 1, -1, ms_up(Fraction((I64MAX - 1) * W, I64MAX))])
    tr.rl("bucket", "bh6", I64MAX, I64MAX, "3650d", cost=2,
          expect=[1, I64MAX, 1, ms_up(Fraction(W, I64MAX)), ms_up(Fraction((I64MAX - 1) * W, I64MAX))])
    return tr


def gen_types():
    tr = Transcript("types", ["TYPE names, EXISTS, WRONGTYPE between the RL algorithms and CL.THROTTLE,",
                              "keys changing type once they expired."])
    T0 = align_up(START + 1, 10 * SEC) + 10 * SEC
    tr.clock(T0)
    args = {"fixed": (3, "1s"), "log": (3, "1s"), "slide": (3, "1s"), "bucket": (3, 3, "1s")}
    for a in ALGS:
        tr.blank()
        k = "k" + a
        tr.rl(a, k, *args[a])
        tr.type(k, a)
        tr.exists(k, 1)
        for b in ALGS:
            if b != a:
                tr.rl(b, k, *args[b], expect="WRONGTYPE")
                tr.rl(b, k, *args[b], cost=0, expect="WRONGTYPE")
        tr.cl(k, 1, 1, 1, expect="WRONGTYPE")
        tr.type(k, a)
        tr.rl(a, k, *args[a], cost=0)
    tr.blank()
    tr.comment("A CL.THROTTLE key (type string) refuses every RL command")
    tr.cl("c", 1, 1, 1, expect=[0, 2, 1, -1, 1])
    tr.type("c", "string")
    for b in ALGS:
        tr.rl(b, "c", *args[b], expect="WRONGTYPE")
        tr.rl(b, "c", *args[b], cost=0, expect="WRONGTYPE")
    tr.blank()
    tr.comment("COST 0 and rejected requests create nothing, so no type either")
    tr.rl("fixed", "n", 3, "1s", cost=0)
    tr.rl("slide", "n", 3, "1s", cost=4)
    tr.type("n", "none")
    tr.rl("log", "n", 3, "1s", cost=0)
    tr.rl("bucket", "n", 3, 3, "1s", cost=0)
    tr.exists("n", 0)
    tr.blank()
    tr.comment("Once a key has expired (fresh state) it may be used with another algorithm")
    order = ["fixed", "slide", "log", "bucket"]
    t = align_up(tr.now + 1, 10 * SEC)
    for i, a in enumerate(order):
        tr.clock(t)
        d = tr.rl(a, "m", *args[a])
        nxt = order[(i + 1) % 4]
        exp = t + d.reset_ns
        tr.clock(exp - 1)
        tr.type("m", a)
        tr.rl(nxt, "m", *args[nxt], expect="WRONGTYPE")
        tr.clock(exp)
        tr.type("m", "none")
        t = align_up(exp, 10 * SEC)
    tr.clock(t)
    tr.rl("fixed", "m", 3, "1s")
    tr.blank()
    tr.comment("A CL.THROTTLE key lives to the end of its expiry millisecond (cl-throttle.md 6.3)")
    t = align_up(tr.now + 1, 10 * SEC)
    tr.clock(t)
    tr.cl("x", 1, 1, 1, expect=[0, 2, 1, -1, 1])
    tr.pttl("x", 1000)
    tr.clock(t + 1001 * MS - 1)
    tr.rl("fixed", "x", 3, "1s", expect="WRONGTYPE")
    tr.clock(t + 1001 * MS)
    tr.exists("x", 0)
    tr.rl("fixed", "x", 3, "1s")
    tr.cl("x", 1, 1, 1, expect="WRONGTYPE")
    tr.type("x", "fixed")
    return tr


# ----------------------------------------------------------------------------------------
# Seeded random scenarios.

RAND_WINDOWS = ["1ms", "7ms", "1s", "1500ms"]


def random_params(rng, alg):
    if alg == "bucket":
        return [rng.randint(1, 5), rng.randint(1, 5), rng.choice(RAND_WINDOWS)]
    return [rng.randint(1, 5), rng.choice(RAND_WINDOWS)]


def window_of(alg, params):
    return parse_period(params[-1])


def gen_random(alg, seed, n_ops=300, mixed=False):
    rng = random.Random(seed)
    title = "mixed algorithms (WRONGTYPE and keys changing type after expiry)" if mixed else ALGS[alg].cmd
    tr = Transcript("random_" + alg, [
        "Seeded random scenario: %s, seed %d, %d operations." % (title, seed, n_ops),
        ("Capacity 1-5, rate 1-5, periods %s" if alg == "bucket" else
         "Limits 1-5 (bucket: capacity 1-5, rate 1-5), windows %s" if mixed else
         "Limits 1-5, windows %s") % "/".join(RAND_WINDOWS)
        + ", costs 0-6, time steps 0..2 windows at ns granularity",
        "(some aimed at an exact retry/reset instant -1/0/+1 ns), occasional parameter",
        "changes, PTTL/EXISTS/TYPE queries."])
    keys = ["r%d" % i for i in range(1, 5 if not mixed else 6)]
    algs = list(ALGS) if mixed else [alg]
    kalg = {k: rng.choice(algs) for k in keys}
    kparams = {k: random_params(rng, kalg[k]) for k in keys}
    last = {k: None for k in keys}     # the last decision on the key (for aimed steps)
    tr.now = align_up(START + 1, 10 * SEC) + rng.randrange(0, 10 * SEC)
    tr.emit("DEBUG CLOCK SET %dns" % tr.now, "+OK")
    ops = 0
    while ops < n_ops:
        k = rng.choice(keys)
        r = rng.random()
        if r < 0.08:
            tr.pttl(k)
            ops += 1
            continue
        if r < 0.11:
            tr.exists(k) if rng.random() < 0.5 else tr.type(k)
            ops += 1
            continue
        a = kalg[k]
        if mixed and rng.random() < 0.2:
            a = rng.choice(list(ALGS))            # likely WRONGTYPE unless expired
            params = random_params(rng, a)
            if tr.lookup(k) is None:
                kalg[k], kparams[k] = a, params
        elif rng.random() < 0.1:
            params = random_params(rng, a)        # parameter change on this key
            if rng.random() < 0.5:                # change one parameter only
                old = list(kparams[k])
                i = rng.randrange(len(params))
                old[i] = params[i]
                params = old
            kparams[k] = params
        else:
            params = kparams[k]
        if rng.random() < 0.2:
            cost = rng.randint(0, 6)
        else:
            cost = rng.choice([0, 1, 1, 1, 1, 2, 2, 3])
        W = window_of(a, params)
        # time step
        x = rng.random()
        if x < 0.25:
            step = 0
        elif x < 0.5 and last[k] is not None:
            t_dec, d = last[k]
            targets = [t_dec + v for v in (d.retry_ns, d.reset_ns) if v]
            targets = [t for t in targets if t + 1 >= tr.now]
            step = 0
            if targets:
                step = max(0, rng.choice(targets) + rng.choice([-1, 0, 0, 1]) - tr.now)
        elif x < 0.75:
            step = rng.randint(0, W // 5)
        else:
            step = rng.randint(0, 2 * W)
        if step:
            tr.clock(tr.now + step)
        # non-writing calls whose rule-based reply would disagree with the key's stored
        # expiry (see the report) are replaced by the stored parameters
        e = tr.lookup(k)
        if e is not None and e[0] == "rl" and e[1].name == a:
            d = tr.peek_rl(a, k, [str(v) for v in params], cost)
            if d.ambiguous:
                params = kparams[k] = stored_params(e, params)
                REDRAWN[0] += 1
        d = tr.rl(a, k, *params, cost=cost)
        if d is not None:
            last[k] = (tr.now, d)
        ops += 1
    return tr


REDRAWN = [0]


def stored_params(e, params):
    """Parameters whose window equals the window the key was written with."""
    alg, st = e[1], e[2]
    if alg is Bucket:
        return params
    W = st.W
    for unit in RAND_WINDOWS:
        if parse_period(unit) == W:
            return params[:-1] + [unit]
    raise AssertionError(W)


# ----------------------------------------------------------------------------------------

def build():
    files = {}
    for alg in ALGS:
        files.update(gen_streams(alg))
    files["bucket_no_flooring"] = gen_no_flooring()
    files["fixed"] = gen_fixed()
    files["log"] = gen_log()
    files["slide"] = gen_slide()
    files["bucket"] = gen_bucket()
    files["types"] = gen_types()
    seeds = {"fixed": 101, "log": 202, "slide": 303, "bucket": 404}
    for alg, seed in seeds.items():
        files["random_" + alg] = gen_random(alg, seed)
    files["random_mixed"] = gen_random("mixed", 505, mixed=True)
    return {name: tr.text() for name, tr in files.items()}


def main():
    ap = argparse.ArgumentParser(description="Generate the RL transcripts of this directory.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="regenerate in memory and fail if a file here differs")
    mode.add_argument("--out", metavar="DIR",
                      help="write the files into DIR (which must exist) instead of here")
    args = ap.parse_args()
    check = args.check
    outdir = args.out if args.out is not None else HERE
    if not os.path.isdir(outdir):
        ap.error("--out %s: not a directory" % outdir)
    out = build()
    bad = []
    for name, text in sorted(out.items()):
        path = os.path.join(outdir, name + ".txt")
        if check:
            try:
                with open(path) as f:
                    if f.read() != text:
                        bad.append(name)
            except FileNotFoundError:
                bad.append(name)
        else:
            with open(path, "w") as f:
                f.write(text)
        print("%-22s %5d lines" % (name + ".txt", text.count("\n")))
    print("random calls redrawn to avoid the stored-expiry ambiguity:", REDRAWN[0])
    if bad:
        print("differs:", ", ".join(bad))
        sys.exit(1)
    # replay every generated file through the independent checker (check.py)
    sys.path.insert(0, HERE)
    import check
    check.main([os.path.join(outdir, name + ".txt") for name in sorted(out)])


if __name__ == "__main__":
    main()
