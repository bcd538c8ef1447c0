#!/usr/bin/env python3
"""Independent replay check of the RL transcripts (python3 check.py [file.txt ...]).

Written separately from gen.py's oracle (it imports nothing from it): it re-reads every
*.txt here, replays the commands on its own model and checks each reply by definition:
  * limited/remaining by direct evaluation (remaining by simulating cost-1 requests),
  * retry_after_ms = r: the request is NOT admitted after a wait of (r-1) ms and IS
    admitted after r ms (so r is the smallest wait in ns, rounded up to ms);
  * reset_after_ms = z: the state is not fresh after (z-1) ms and is fresh after z ms;
  * PTTL = p: the key exists after (p-1) ms and no longer after p ms.
"Admitted/fresh after a wait" includes the key disappearing when its stored state
becomes fresh. Exact arithmetic only (int, Fraction).
"""
import glob
import os
import sys
from fractions import Fraction

MS, SEC = 10 ** 6, 10 ** 9
MAXI = 2 ** 63 - 1
WT = "-WRONGTYPE Operation against a key holding the wrong kind of value"


def dur(s):
    for suf, m in (("ms", MS), ("s", SEC), ("m", 60 * SEC), ("h", 3600 * SEC), ("d", 86400 * SEC)):
        if s.endswith(suf) and s[:-len(suf)].isdigit():
            return int(s[:-len(suf)]) * m
    return int(s) * SEC


# --- models: each returns functions over a state dict; None = no key -------------------

def fx_count(st, W, t):
    return st["n"] if st and st["S"] == t - t % W else 0


def fx_ok(st, a, t, c):
    return fx_count(st, a["W"], t) + c <= a["L"]


def fx_write(st, a, t, c):
    return {"S": t - t % a["W"], "n": fx_count(st, a["W"], t) + c, "W": a["W"]}


def fx_fresh(st, a, t):
    return fx_count(st, a["W"], t) == 0


def fx_dies(st):
    return st["S"] + st["W"]


def lg_live(st, W, t):
    return sum(n for (u, n) in st["e"] if u + W > t) if st else 0


def lg_ok(st, a, t, c):
    return lg_live(st, a["W"], t) + c <= a["L"]


def lg_write(st, a, t, c):
    e = [(u, n) for (u, n) in (st["e"] if st else []) if u + a["W"] > t]
    e.append((t, c))
    return {"e": e, "W": a["W"]}


def lg_fresh(st, a, t):
    return lg_live(st, a["W"], t) == 0


def lg_dies(st):
    return max(u for u, _ in st["e"]) + st["W"]


def sl_view(st, W, t):
    w0 = t - t % W
    if not st:
        return w0, 0, 0
    if st["S"] == w0:
        return w0, st["cur"], st["prev"]
    if st["S"] + W == w0:
        return w0, 0, st["cur"]
    return w0, 0, 0


def sl_est(st, W, t):
    w0, cur, prev = sl_view(st, W, t)
    return cur + Fraction(prev) * (w0 + W - t) / W


def sl_ok(st, a, t, c):
    return sl_est(st, a["W"], t) < a["L"] - c + 1


def sl_write(st, a, t, c):
    w0, cur, prev = sl_view(st, a["W"], t)
    return {"S": w0, "cur": cur + c, "prev": prev, "W": a["W"]}


def sl_fresh(st, a, t):
    _, cur, prev = sl_view(st, a["W"], t)
    return cur == 0 and prev == 0


def sl_dies(st):
    return st["S"] + 2 * st["W"]


def bk_tokens(st, a, t):
    if not st or st["T"] <= t:
        return Fraction(a["L"])
    return a["L"] - (st["T"] - t) * Fraction(a["r"], a["P"])


def bk_ok(st, a, t, c):
    return bk_tokens(st, a, t) >= c


def bk_write(st, a, t, c):
    start = st["T"] if st and st["T"] > t else Fraction(t)
    return {"T": start + Fraction(c * a["P"], a["r"])}


def bk_fresh(st, a, t):
    return not st or st["T"] <= t


def bk_dies(st):
    return st["T"]


MODELS = {
    "RL.FIXED": ("fixed", fx_ok, fx_write, fx_fresh, fx_dies),
    "RL.LOG": ("log", lg_ok, lg_write, lg_fresh, lg_dies),
    "RL.SLIDE": ("slide", sl_ok, sl_write, sl_fresh, sl_dies),
    "RL.BUCKET": ("bucket", bk_ok, bk_write, bk_fresh, bk_dies),
}


def remaining_closed(kind, st, a, t):
    if kind == "fixed":
        return max(0, a["L"] - fx_count(st, a["W"], t))
    if kind == "log":
        return max(0, a["L"] - lg_live(st, a["W"], t))
    if kind == "slide":
        x = a["L"] - sl_est(st, a["W"], t)
        return max(0, -((-x.numerator) // x.denominator))
    x = bk_tokens(st, a, t)
    return max(0, x.numerator // x.denominator)


class Replay:
    def __init__(self, path):
        self.path = path
        self.now = 1_700_000_000_000_000_000
        self.keys = {}   # name -> [kind, state] ; kind "cl": state = (tat, expiry_ms)

    def get(self, k):
        v = self.keys.get(k)
        if v is None:
            return None
        if v[0] == "cl":
            if self.now // MS > v[1][1]:
                del self.keys[k]
                return None
            return v
        if MODELS_BY_KIND[v[0]][4](v[1]) <= self.now:
            del self.keys[k]
            return None
        return v

    def run(self, cmd, reply):
        w = cmd.split()
        op = w[0].upper()
        if op == "DEBUG":
            t = int(w[3][:-2])
            assert w[3].endswith("ns") and t >= self.now and reply == "+OK"
            self.now = t
        elif op in MODELS:
            self.rl(op, w[1:], reply)
        elif op == "PTTL":
            v = self.get(w[1])
            p = int(reply)
            assert p <= MAXI
            if v is None:
                assert p == -2
            elif v[0] == "cl":
                assert p == v[1][1] - self.now // MS
            else:
                dies = MODELS_BY_KIND[v[0]][4](v[1])
                if p < MAXI:
                    assert dies <= self.now + p * MS, (p, dies - self.now)
                assert dies > self.now + (p - 1) * MS, (p, dies - self.now)
        elif op == "TYPE":
            v = self.get(w[1])
            assert reply == "+" + ("none" if v is None else "string" if v[0] == "cl" else v[0])
        elif op == "EXISTS":
            assert reply == str(int(self.get(w[1]) is not None))
        elif op == "CL.THROTTLE":
            self.cl(w[1:], reply)
        else:
            raise AssertionError("unknown command " + cmd)

    def cl(self, w, reply):
        k = w[0]
        v = self.get(k)
        if v is not None and v[0] != "cl":
            assert reply == WT
            return
        B, C, P = int(w[1]), int(w[2]), int(w[3])
        Q = int(w[4]) if len(w) > 4 else 1
        assert (P * SEC) % C == 0
        ei = P * SEC // C
        tat = v[1][0] if v else self.now
        new = max(tat, self.now) + ei * Q
        allowed = new - self.now <= ei * (B + 1)
        got = [int(x) for x in reply.strip("[]").split()]
        assert got[0] == (0 if allowed else 1) and got[1] == B + 1
        if allowed:
            ttl = new - self.now
            assert got[2:] == [(ei * (B + 1) - ttl) // ei, -1,
                               ttl // SEC + (1 if ttl % SEC >= MS else 0)], got
            self.keys[k] = ["cl", (new, self.now // MS + ttl // MS)]

    def rl(self, op, w, reply):
        kind, ok, write, fresh, dies = MODELS[op]
        k = w[0]
        rest = w[1:]
        cost = 1
        if len(rest) >= 2 and rest[-2].upper() == "COST":
            cost = int(rest[-1])
            rest = rest[:-2]
        if kind == "bucket":
            a = {"L": int(rest[0]), "r": int(rest[1]), "P": dur(rest[2])}
        else:
            a = {"L": int(rest[0]), "W": dur(rest[1])}
        v = self.get(k)
        if v is not None and v[0] != kind:
            assert reply == WT, reply
            return
        st = v[1] if v else None
        stored_dies = dies(st) if st else None
        got = [int(x) for x in reply.strip("[]").split()]
        assert len(got) == 5 and got[1] == a["L"] and max(got) <= MAXI
        now = self.now
        admitted = ok(st, a, now, cost)
        assert got[0] == (0 if admitted else 1)
        after = write(st, a, now, cost) if admitted and cost > 0 else st
        after_dies = dies(after) if after else None
        # remaining
        rem = remaining_closed(kind, after, a, now)
        if a["L"] <= 1000:
            s, n = after, 0
            while n <= a["L"] and ok(s, a, now, 1):
                s, n = write(s, a, now, 1), n + 1
            assert n == rem
        assert got[2] == rem, (got, rem)

        def admitted_after(d):
            t = now + d
            if stored_dies is not None and t >= stored_dies:
                return ok(None, a, t, cost)
            return ok(st, a, t, cost)

        def fresh_after(d):
            t = now + d
            if after_dies is not None and t >= after_dies:
                return True
            return fresh(after, a, t)

        r = got[3]
        if admitted or cost > a["L"]:
            assert r == -1
            if not admitted:
                for d in (0, 10 ** 9, 10 ** 18, 10 ** 30):
                    assert not admitted_after(d)
        else:
            assert r >= 1
            assert not admitted_after((r - 1) * MS)
            if r < MAXI:
                assert admitted_after(r * MS)
        z = got[4]
        assert z >= 0
        if z == 0:
            assert fresh_after(0)
        else:
            assert not fresh_after((z - 1) * MS)
            if z < MAXI:
                assert fresh_after(z * MS)
        if admitted and cost > 0:
            self.keys[k] = [kind, after]


MODELS_BY_KIND = {m[0]: m for m in MODELS.values()}


def check_file(path):
    lines = [l.rstrip("\n") for l in open(path)]
    rp = Replay(path)
    i, n = 0, 0
    while i < len(lines):
        l = lines[i]
        if not l or l.startswith("#"):
            i += 1
            continue
        assert l.startswith("> "), (path, i + 1, l)
        reply = lines[i + 1]
        try:
            rp.run(l[2:], reply)
        except AssertionError as e:
            raise AssertionError("%s:%d: %s -> %s: %s" % (path, i + 1, l, reply, e))
        n += 1
        i += 2
    return n


def main(paths=None):
    here = os.path.dirname(os.path.abspath(__file__))
    paths = paths or sorted(glob.glob(os.path.join(here, "*.txt")))
    total = 0
    for p in paths:
        total += check_file(p)
    print("check.py: %d files, %d commands replayed and verified" % (len(paths), total))


if __name__ == "__main__":
    main(sys.argv[1:])
