#!/usr/bin/env python3
"""SVG bar chart of ops/s per command, rlserver vs Redis (+ Lua), at one setting.

  chart.py redis.csv[,more] rlserver.csv[,more] SETTING OUT.svg

Medians over the runs the noise check keeps, from compare.sh's raw.csv files (read by
ratios.py, which also prints its tables).
"""
import sys

sys.argv, args = sys.argv[:1] + sys.argv[1:3], sys.argv[3:]
import ratios  # noqa: E402  (reuses its loader; prints its table to stdout)

setting, out = args
redis, rl = ratios.redis, ratios.rl
tests = [("ping_mbulk", "PING"), ("gcra", "CL.THROTTLE"), ("fixed", "RL.FIXED"), ("log", "RL.LOG"),
         ("slide", "RL.SLIDE"), ("bucket", "RL.BUCKET")]
rps = lambda side, t: ratios.med(side.get((setting, t), (0, []))[1], "rps")  # noqa: E731
rows = [(label, rps(redis, t), rps(rl, t)) for t, label in tests]
rows = [(label, 0 if a != a else a, 0 if b != b else b) for label, a, b in rows]  # nan: not run
top = max(max(a, b) for _, a, b in rows) * 1.15
W, H, left, bottom, top_pad = 760, 340, 70, 50, 40
plot_w, plot_h = W - left - 20, H - bottom - top_pad
group = plot_w / len(rows)
bar = group * 0.35
y = lambda v: top_pad + plot_h - v / top * plot_h
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{left}" y="20" font-size="14">ops/s at c=50 P={setting.split(":")[1]}, server pinned to one core; '
       'ratio rlserver / Redis + Lua below</text>']
step = 10 ** (len(str(int(top))) - 1)
v = 0
while v <= top:
    svg.append(f'<line x1="{left}" x2="{W - 20}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ddd"/>'
               f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v / 1000:.0f}k</text>')
    v += step
for i, (label, a, b) in enumerate(rows):
    x0 = left + i * group + group * 0.12
    for j, (val, color) in enumerate(((a, "#d62728"), (b, "#1f77b4"))):
        x = x0 + j * bar
        svg.append(f'<rect x="{x:.1f}" y="{y(val):.1f}" width="{bar:.1f}" height="{y(0) - y(val):.1f}" fill="{color}"/>')
        svg.append(f'<text x="{x + bar / 2:.1f}" y="{y(val) - 4:.1f}" text-anchor="middle" font-size="10">{val / 1000:.0f}k</text>')
    ratio = f"{b / a:.1f}x" if a else ""
    svg.append(f'<text x="{x0 + bar:.1f}" y="{H - bottom + 16}" text-anchor="middle">{label}</text>')
    svg.append(f'<text x="{x0 + bar:.1f}" y="{H - bottom + 32}" text-anchor="middle" font-weight="bold">{ratio}</text>')
svg.append(f'<rect x="{W - 200}" y="30" width="12" height="12" fill="#d62728"/><text x="{W - 184}" y="40">Redis 7 + Lua</text>')
svg.append(f'<rect x="{W - 200}" y="48" width="12" height="12" fill="#1f77b4"/><text x="{W - 184}" y="58">rlserver</text>')
svg.append("</svg>")
open(out, "w").write("\n".join(svg) + "\n")
