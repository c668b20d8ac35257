#!/usr/bin/env python3
"""The month: a simulated November 2026 billed and checked hour by hour.

gpupool-sim runs 30 days of a small synthetic world (2 orgs, 6 teams with
nested guarantees, 256 GPUs: H100, A100 with half the nodes MIG-partitioned,
L40S shared by MPS and time-slicing) and writes its ledger (--ledger).
billref.py (the independent reference) then checks:

  - the chain verifies, and holds as many records as the simulator wrote;
  - for EVERY GPU model and EVERY hour of the month the idle identity holds
    exactly:  whole + mig + mps + timeslice + idle_in_guarantees +
    idle_unowned == physical, no field is negative (no hour allocates more
    than the fleet has), and physical is the fleet the simulator reports
    (capacity_gpus x 3600 s), not just what the ledger's capacity records say;
  - allocation seen from the tenants (their guaranteed and burst lines)
    equals allocation seen from the fleet, per model, to the milli-GPU-second;
  - every burst line's amount, re-derived here from the records alone with
    a price table that changes mid-month (mid-hour, mid-interval), matches;
  - chargeback orgs owe their subtotal, showback orgs nothing;
  - a bill as of mid-month bills less than the month and never more per line.

Then gpupool's offline bill (`gpupool bill --ledger`, the same C code as
gpupoold's GET /v1/bill) must print billref's JSON field for field, with
and without --hourly.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import billref  # noqa: E402

BIN = os.environ.get("GP_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
NOV = 1793491200
DEC = NOV + 30 * 86400
CHANGE = NOV + 15 * 86400 + 12 * 3600 + 1800   # 2026-11-16T12:30:00Z
PRICES = {"currency": "USD",
          "versions": [{"effective": NOV - 31 * 86400, "gpu_types": {"H100": "2.50", "A100": "1.20", "L40S": "0.80"},
                        "premium": {"nvlink": "1.10", "block": "1.25"}},
                       {"effective": CHANGE, "gpu_types": {"H100": "2.250001", "A100": "1.10", "L40S": "0.75"},
                        "premium": {"nvlink": "1.05", "block": "1.20"}}],
          "modes": {"org00": "chargeback", "org01": "showback"}}
SIM_ARGS = ["--trace", "synthetic", "--seed", "7", "--synth-gpus", "256", "--synth-orgs", "2", "--synth-teams", "6",
            "--synth-jobs-per-day", "200", "--synth-gang-max", "32", "--synth-nodes-per-block", "8",
            "--synth-a100-mig", "0.5", "--synth-max-days", "3"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def simulate(tmp):
    ledger = os.path.join(tmp, "ledger.jsonl")
    out = subprocess.run([os.path.join(BIN, "gpupool-sim")] + SIM_ARGS + ["--ledger", ledger],
                         capture_output=True, text=True, check=True).stdout
    written = next(int(x.split()[1]) for x in out.splitlines() if x.startswith("ledger: "))
    summary = json.loads(out.strip().splitlines()[-1])
    return ledger, written, summary["runs"][0]["capacity_gpus"]


def check_identity(bill, capacity_gpus):
    hourly = bill["hourly"]
    types = sorted({r["gpu_type"] for r in hourly})
    check(len(hourly) == 720 * len(types), f"{len(hourly)} hourly rows for {len(types)} models x 720 hours")
    physical = {}
    for r in hourly:
        parts = [r[f] for f in billref.FLEET_FIELDS[1:]]
        check(all(p >= 0 for p in parts), f"negative field in {r}")
        check(sum(parts) == r["physical"], f"identity broken in {r}")
        physical[r["hour"]] = physical.get(r["hour"], 0) + r["physical"]
    check(set(physical.values()) == {round(capacity_gpus * 1000) * 3600},
          f"physical per hour {set(physical.values())} != the simulator's {capacity_gpus} GPUs")
    for f in bill["fleet"]:
        for field in billref.FLEET_FIELDS:
            check(f[field] == sum(r[field] for r in hourly if r["gpu_type"] == f["gpu_type"]),
                  f"fleet {f['gpu_type']} {field} is not the sum of its hours")
    total = {f: sum(x[f] for x in bill["fleet"]) for f in billref.FLEET_FIELDS}
    for f in ("mig", "mps", "timeslice", "idle_in_guarantees", "idle_unowned"):
        check(total[f] > 0, f"the month has no {f} (the world should exercise it)")
    return len(hourly), types


def check_tenants_match_fleet(bill):
    used = {}
    for t in bill["tenants"]:
        for x in t["lines"]:
            check(x["kind"] != "unpriced", f"unpriced line {x} (every second has a price)")
            if x["kind"] in ("guaranteed", "burst"):
                used[x["gpu_type"]] = used.get(x["gpu_type"], 0) + x["milli_gpu_seconds"]
    for f in bill["fleet"]:
        alloc = sum(f[s] for s in billref.SHARES)
        check(used.get(f["gpu_type"], 0) == alloc,
              f"{f['gpu_type']}: tenants used {used.get(f['gpu_type'], 0)}, fleet allocated {alloc}")


def burst_amounts(records):
    """{(tenant, gpu_type, topology): exact amount} of burst usage, each record split at CHANGE by hand."""
    closed = {r["interval"] for r in records if r["kind"] == "close"}
    out = {}
    for r in records:
        if r["kind"] not in ("open", "close") or r["class"] != "burstable":
            continue
        if r["kind"] == "open" and r["interval"] in closed:
            continue
        a, b = max(r["start"], NOV), min(r.get("end", DEC), DEC)
        for lo, hi, v in ((a, min(b, CHANGE), 0), (max(a, CHANGE), b, 1)):
            if hi <= lo:
                continue
            ver = PRICES["versions"][v]
            price = Fraction(ver["gpu_types"][r["gpu_type"]])
            prem = Fraction(ver["premium"].get(r["topology"], "1"))
            key = (r["tenant"], r["gpu_type"], r["topology"])
            out[key] = out.get(key, 0) + Fraction(r["milli_gpus"] * (hi - lo), 3600 * 1000) * price * prem
    return out


def check_burst_lines(bill, records):
    expected = burst_amounts(records)
    seen = 0
    for t in bill["tenants"]:
        for x in t["lines"]:
            if x["kind"] == "burst":
                seen += 1
                check(x["amount"] == billref.fmt6(expected.get((t["tenant"], x["gpu_type"], x["topology"]), 0)),
                      f"burst line {t['tenant']} {x} != the hand split")
    check(seen == len([k for k, v in expected.items() if v > 0]), "burst lines missing or extra")
    return seen


def check_dues(bill):
    for t in bill["tenants"]:
        want = t["subtotal"] if PRICES["modes"].get(t["org"]) == "chargeback" else "0.000000"
        check(t["due"] == want, f"{t['tenant']} due {t['due']} in {t['mode']}")


def check_as_of(records):
    mid = billref.bill(records, PRICES, "2026-11", as_of=NOV + 9 * 86400 + 47 * 60 + 13)
    full = billref.bill(records, PRICES, "2026-11")
    full_lines = {(t["tenant"], x["kind"], x["gpu_type"], x["topology"]): x["milli_gpu_seconds"]
                  for t in full["tenants"] for x in t["lines"]}
    for t in mid["tenants"]:
        for x in t["lines"]:
            check(x["milli_gpu_seconds"] <= full_lines.get((t["tenant"], x["kind"], x["gpu_type"], x["topology"]), 0),
                  f"as-of line {x} above the month's")
    check(sum(f["physical"] for f in mid["fleet"]) < sum(f["physical"] for f in full["fleet"]), "as-of fleet")


def compare_with_c_bill(tmp, ledger, prices_path, bill_plain, bill_hourly):
    gpupool = os.path.join(BIN, "gpupool")
    if not os.path.exists(gpupool):
        check(False, f"{gpupool} is not built: the C bill was not compared")
        return False
    for extra, want in (([], bill_plain), (["--hourly"], bill_hourly)):
        p = subprocess.run([gpupool, "bill", "--ledger", ledger, "--prices", prices_path, "--period", "2026-11",
                            "-o", "json"] + extra, capture_output=True, text=True)
        check(p.returncode == 0, f"gpupool bill {extra}: exit {p.returncode}: {p.stderr.strip()}")
        if p.returncode == 0:
            got = json.loads(p.stdout)
            check(got == want, f"the C bill {extra} differs from billref: " + first_difference(got, want))
    return True


def first_difference(a, b, where="$"):
    if type(a) is not type(b):
        return f"{where}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return first_difference(a.get(k), b.get(k), f"{where}.{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return first_difference(x, y, f"{where}[{i}]")
    return f"{where}: {a!r} vs {b!r}"


def main():
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        ledger, written, capacity_gpus = simulate(tmp)
        records, _ = billref.read_ledger(ledger)
        check(len(records) == written, f"{len(records)} records read, the simulator wrote {written}")
        prices_path = os.path.join(tmp, "prices.json")
        with open(prices_path, "w") as f:
            json.dump(PRICES, f)
        bill_hourly = billref.bill(records, PRICES, "2026-11", hourly=True)
        rows, types = check_identity(bill_hourly, capacity_gpus)
        bill_plain = billref.bill(records, PRICES, "2026-11")
        check_tenants_match_fleet(bill_plain)
        bursts = check_burst_lines(bill_plain, records)
        check_dues(bill_plain)
        check_as_of(records)
        compared = compare_with_c_bill(tmp, ledger, prices_path, bill_plain, bill_hourly)
    print(f"month: {len(records)} records, identity over {rows} model-hours ({', '.join(types)}), "
          f"{len(bill_plain['tenants'])} tenants, {bursts} burst lines re-derived, C bill "
          f"{'compared' if compared else 'not compared'}, {time.monotonic() - t0:.1f} s")
    if failures:
        print(f"{len(failures)} failures")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
