#!/usr/bin/env python3
"""Host-side checks of the Soft-RoCE end-to-end run (guest_e2e.sh): every case's JSON, its
exit code, and the rows in the exported SQLite file."""
import json
import sqlite3
import sys
from pathlib import Path

out = Path(sys.argv[1])
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)


def load(name):
    p = out / f"case-{name}.json"
    try:
        return json.loads(p.read_text())
    except Exception as e:  # noqa: BLE001
        err = (out / f"case-{name}.err")
        failures.append(f"{name}: no JSON ({e}); stderr: {err.read_text() if err.exists() else '?'}")
        return None


rcs = {}
for line in (out / "cases.txt").read_text().split("\n"):
    if line.strip():
        name, rc = line.split(" rc=")
        rcs[name] = int(rc)

PASS_CASES = {
    "write_bw": "bw", "read_bw": "bw", "send_bw": "bw", "write_imm_bw": "bw",
    "write_bw_1m": "bw", "write_bw_qp4": "bw", "write_lat": "lat", "send_lat": "lat",
    "read_lat": "lat", "loopback_write": "bw", "loopback_read": "bw", "after_faults": "bw",
    "bound": "bw",
}
for name, mode in PASS_CASES.items():
    j = load(name)
    if j is None:
        continue
    check(rcs.get(name) == 0, f"{name}: exit {rcs.get(name)}, reason {j.get('reason')}")
    check(j["status"] == "PASSED", f"{name}: {j['status']}: {j.get('reason')}")
    check(j["transport"] == "verbs", f"{name}: transport {j['transport']}")
    check(j["integrity"]["checked"] and j["integrity"]["wrong_bytes"] == 0,
          f"{name}: integrity {j['integrity']}")
    check(j["initiator"]["reg_path"] == "host", f"{name}: reg_path {j['initiator']['reg_path']}")
    check(j["path_mtu"] == 1024, f"{name}: path MTU {j['path_mtu']} (netdev MTU 1500 -> 1024)")
    check(j["initiator"]["nic"] in ("rxe1", "rxe2"), f"{name}: nic {j['initiator']['nic']}")
    check(j["initiator"]["gid_index"] >= 0, f"{name}: no GID index recorded")
    # Where each side's thread ran: worker b (the target) with --cpu 1; worker a unbound, as
    # rxe has no PCI device and so no NUMA node.
    tb = j["target"].get("cpu_binding")
    check(tb == f"cpu 1 (--cpu; nic {j['target']['nic']}, numa unknown)",
          f"{name}: target cpu_binding {tb!r}")
    ib = j["initiator"].get("cpu_binding")
    check(ib == f"not bound: {j['initiator']['nic']} has no readable numa_node "
          "(no PCI device: rxe, siw)", f"{name}: initiator cpu_binding {ib!r}")
    m = j["measurement"]
    if mode == "bw":
        check(m["bandwidth"] and m["bandwidth"]["avg_gbps"] > 0, f"{name}: no bandwidth")
    else:
        lat = m["latency"]
        check(lat and 0 < lat["min_us"] <= lat["median_us"] <= lat["max_us"],
              f"{name}: latency {lat}")

FAIL_CASES = {
    "corrupt": ("FAILED", 1, "3 of 65536 B wrong"),
    "wrong_gid": ("FAILED", 1, "gid"),
    "rkey_invalidated": ("FAILED", 1, "remote"),
    "port_down": ("FAILED", 1, ""),
    "cuda_auto_no_gpu": ("SKIPPED", 3, "has no GPUs"),
}
for name, (status, rc, needle) in FAIL_CASES.items():
    j = load(name)
    if j is None:
        continue
    check(rcs.get(name) == rc, f"{name}: exit {rcs.get(name)}, want {rc}")
    check(j["status"] == status, f"{name}: {j['status']} want {status}: {j.get('reason')}")
    check(needle.lower() in j["reason"].lower(), f"{name}: reason lacks '{needle}': {j['reason']}")
    check(j["gpudirect"] is False, f"{name}: gpudirect set on a failed/emulated path")

# The binding itself (guest_e2e.sh): a thread of worker b was bound to CPU 1 alone while the
# "bound" run was on, and none was left bound after it.
bound = dict(kv.split("=") for kv in (out / "bound.txt").read_text().split())
check(bound.get("thread", "none") != "none", f"no thread of worker b ran bound to CPU 1: {bound}")
check(bound.get("after") == "0", f"threads of worker b still bound after the run: {bound}")

# The SQLite file holds one row per case, with the same verdicts.
db = sqlite3.connect(str(out / "results.db"))
rows = {r[0]: r[1:] for r in db.execute(
    "SELECT test_id, status, transport, integrity_wrong_bytes, reason, target_cpu_binding "
    "FROM results")}
check(len(rows) == len(PASS_CASES) + len(FAIL_CASES),
      f"database holds {len(rows)} rows, want {len(PASS_CASES) + len(FAIL_CASES)}")
for name in list(PASS_CASES) + list(FAIL_CASES):
    j = load(name)
    if j is None:
        continue
    row = rows.get(j["test_id"])
    check(row is not None, f"{name}: no row for {j['test_id']}")
    if row:
        check(row[0] == j["status"], f"{name}: row status {row[0]} vs {j['status']}")
        check(row[4] == j["target"].get("cpu_binding"), f"{name}: stored binding {row[4]!r}")

for name in PASS_CASES:
    j = load(name)
    if j:
        m = j["measurement"]
        fig = (f"{m['bandwidth']['avg_gbps'] * 1000 / 8:.2f} MB/s" if m["bandwidth"]
               else f"median {m['latency']['median_us']:.2f} us")
        print(f"  {name:16s} {j['status']:8s} {fig}")
for name in FAIL_CASES:
    j = load(name)
    if j:
        print(f"  {name:16s} {j['status']:8s} {j['reason'][:150]}")

if failures:
    print("E2E CHECK FAILED:")
    for f in failures:
        print("  -", f)
    sys.exit(1)
print(f"E2E CHECK PASSED: {len(PASS_CASES)} passing cases, {len(FAIL_CASES)} failure cases")
