#!/usr/bin/env python3
"""The readers of readers_load.sh: R threads for S seconds against one coordinator; four in five
read the status page's JSON API over HTTP, one in five runs CLI commands (whole processes over
gRPC). Prints each query kind's calls, median and p99; exits 1 on any failed read or when the
sweep being read made no progress meanwhile.
   readers_load.py BINARY HTTP_BASE SWEEP_ID READERS SECONDS COORDINATOR_PID"""
import json, subprocess, sys, threading, time, urllib.request

bin_, http, sweep, readers, seconds, coord = sys.argv[1:7]
readers, seconds = int(readers), float(seconds)
HTTP = [
    ("http workers", "/api/workers"),
    ("http sweeps", "/api/sweeps?limit=20"),
    ("http results", "/api/results?limit=50"),
    ("http sweep", "/api/sweeps/%s?verdicts=none" % sweep),
    ("http summary", "/api/summary"),
    ("http metrics", "/metrics"),
    ("http page", "/"),
]
CLI = [
    ("cli workers", ["workers", "-o", "json"]),
    ("cli sweeps", ["sweeps"]),
    ("cli results", ["results", "--limit", "50"]),
    ("cli sweep show", ["sweep", "show", sweep, "-o", "json"]),
]
lock = threading.Lock()
times, errors = {}, []
deadline = time.monotonic() + seconds


def progress():
    with urllib.request.urlopen(http + "/api/sweeps/%s?verdicts=none" % sweep, timeout=30) as r:
        j = json.load(r)
    p = j.get("progress", j)
    return p["tests_done"], p["state"]


def record(kind, t, err):
    with lock:
        times.setdefault(kind, []).append(t)
        if err:
            errors.append("%s: %s" % (kind, err))


def http_reader(i):
    k = i
    while time.monotonic() < deadline:
        kind, path = HTTP[k % len(HTTP)]
        k += 1
        t = time.monotonic()
        err = None
        try:
            with urllib.request.urlopen(http + path, timeout=30) as r:
                body = r.read()
                if r.status != 200 or not body:
                    err = "HTTP %d, %d bytes" % (r.status, len(body))
        except Exception as e:  # any failure is a finding
            err = repr(e)
        record(kind, (time.monotonic() - t) * 1000, err)


def cli_reader(i):
    k = i
    while time.monotonic() < deadline:
        kind, args = CLI[k % len(CLI)]
        k += 1
        t = time.monotonic()
        p = subprocess.run([bin_] + args, capture_output=True, timeout=60)
        err = None if p.returncode == 0 and p.stdout else "exit %d: %s" % (
            p.returncode, p.stderr.decode(errors="replace")[:200])
        record(kind, (time.monotonic() - t) * 1000, err)


done0, _ = progress()
threads = [threading.Thread(target=cli_reader if i % 5 == 4 else http_reader, args=(i,))
           for i in range(readers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
done1, state = progress()
rss = 0
with open("/proc/%s/status" % coord) as f:
    for line in f:
        if line.startswith("VmHWM"):
            rss = int(line.split()[1]) // 1024


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(len(v) * q + 0.999) - 1))]


total = 0
for kind in sorted(times):
    v = times[kind]
    total += len(v)
    print("  %-16s %6d calls  median %8.2f ms  p99 %8.2f ms" % (kind, len(v), pct(v, 0.5), pct(v, 0.99)))
print("readers_load: %d reads by %d readers in %.0f s, %d errors; sweep %s: %d -> %d tests done "
      "meanwhile (%s); coordinator peak RSS %d MiB" % (total, readers, seconds, len(errors), sweep,
                                                       done0, done1, state, rss))
for e in errors[:20]:
    print("  error:", e)
ok = not errors and (done1 > done0 or state != "running") and total > 0
sys.exit(0 if ok else 1)
