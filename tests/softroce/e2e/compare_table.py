#!/usr/bin/env python3
"""Turns guest_compare.sh's output into the perftest vs gdrmesh table: per case the median over
rounds (min..max beside it), and the ratio gdrmesh/perftest. Bandwidth in decimal MB/s, latency
in microseconds (perftest's t_typical = median vs gdrmesh's median)."""
import json
import statistics
import sys
from pathlib import Path

out = Path(sys.argv[1])
results = {r["test_id"]: r for r in json.loads((out / "results.json").read_text())}
pt, gd, gb = {}, {}, {}  # perftest, gdrmesh, gdrmesh_before (BEFORE_BIN)
for line in (out / "compare.txt").read_text().splitlines():
    kv = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
    if line.startswith("perftest"):
        key = (kv["op"], int(kv["size"]))
        v = kv.get("bw_avg_MBps") or kv.get("t_typical_us")
        if v and kv.get("status") != "FAILED":
            pt.setdefault(key, []).append(float(v))
    elif line.startswith("gdrmesh"):
        key = (kv["case"], int(kv["size"]))
        into = gb if line.startswith("gdrmesh_before") else gd
        r = results.get(kv.get("test_id", ""))
        if r is None or r["status"] != "PASSED":
            print(f"gdrmesh {key}: {r['status'] + ': ' + r['reason'] if r else 'no result'}")
            continue
        m = r["measurement"]
        v = m["bandwidth"]["avg_gbps"] * 125.0 if m["bandwidth"] else m["latency"]["median_us"]
        into.setdefault(key, []).append(v)

print(f"{'case':18s} {'n':>2s} {'perftest median (min..max)':>30s} "
      f"{'gdrmesh median (min..max)':>30s} {'ratio':>6s}  target")
ok = True
for key in sorted(set(pt) | set(gd)):
    p, g = pt.get(key, []), gd.get(key, [])
    lat = key[0].endswith("lat")
    unit = "us" if lat else "MB/s"
    def fmt(xs):
        if not xs:
            return "-"
        return f"{statistics.median(xs):8.2f} ({min(xs):.1f}..{max(xs):.1f}) {unit}"
    ratio = (statistics.median(g) / statistics.median(p)) if p and g else float("nan")
    meets = (ratio <= 1.0) if lat else (ratio >= 1.0)
    ok &= bool(meets)
    print(f"{key[0] + '/' + str(key[1]):18s} {min(len(p), len(g)):2d} {fmt(p):>30s} {fmt(g):>30s} "
          f"{ratio:6.3f}  {'ok' if meets else 'BELOW TARGET'}")
print("all cases meet the target" if ok else "some cases are below target")
if gb:
    print("\nbefore (BEFORE_BIN) in the same boot:")
    print(f"{'case':18s} {'n':>2s} {'before median (min..max)':>30s} "
          f"{'ratio to perftest':>18s} {'now/before':>11s}")
    for key in sorted(gb):
        p, b, g = pt.get(key, []), gb[key], gd.get(key, [])
        unit = "us" if key[0].endswith("lat") else "MB/s"
        med = statistics.median(b)
        rp = med / statistics.median(p) if p else float("nan")
        rg = statistics.median(g) / med if g else float("nan")
        print(f"{key[0] + '/' + str(key[1]):18s} {len(b):2d} "
              f"{f'{med:8.2f} ({min(b):.1f}..{max(b):.1f}) {unit}':>30s} {rp:18.3f} {rg:11.3f}")
