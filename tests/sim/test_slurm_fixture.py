#!/usr/bin/env python3
"""test_slurm_fixture.py - gpupool-sim on the history a real Slurm made (tests/fixtures/slurm).

The fixture is sacct and scontrol output of a Slurm 22.05 cluster
(tests/slurm/make_fixture.sh).  This test counts the fixture itself, in
Python, independently of the C reader, and checks gpupool-sim's report
against those counts: rows, jobs replayed, jobs that never ran, jobs per
account, and Slurm's own mean and p95 wait per account (Start - Submit,
x the time scale).  Then the same history with rows broken in three ways
must still be read, the broken rows skipped, counted and named by line.
"""
import math
import os
import subprocess
import sys
import tempfile

SRC = os.environ.get("GP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("GP_BIN", os.path.join(SRC, "build", "bin"))
FIX = os.path.join(SRC, "tests", "fixtures", "slurm")
SCALE = 60


def stamp(s):
    import calendar
    import time
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))


def fixture_counts(path):
    """rows, never ran, and per account the Slurm waits of the jobs that ran."""
    with open(path) as f:
        lines = f.read().splitlines()
    head = lines[0].split("|")
    col = {name: i for i, name in enumerate(head)}
    rows, never, waits = 0, 0, {}
    for line in lines[1:]:
        if not line:
            continue
        f = line.split("|")
        rows += 1
        state = f[col["State"]].split(" ")[0]
        if f[col["Start"]] in ("Unknown", "None") or f[col["NodeList"]] == "None assigned" or \
                state in ("PENDING", "RUNNING", "REQUEUED", "SUSPENDED"):
            never += 1
            continue
        wait = (stamp(f[col["Start"]]) - stamp(f[col["Submit"]])) * SCALE
        waits.setdefault(f[col["Account"]], []).append(wait)
    return rows, never, waits


def p95(values):
    v = sorted(values)
    rank = math.ceil(0.95 * len(v))
    return v[max(rank, 1) - 1]


def run_sim(sacct, extra=()):
    cmd = [os.path.join(BIN, "gpupool-sim"), "--trace", "slurm:" + sacct, "--slurm-nodes",
           os.path.join(FIX, "nodes.txt"), "--time-scale", str(SCALE), "--policy", "gpupool,fifo", "--quiet",
           *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"gpupool-sim failed ({p.returncode}): {p.stderr}")
    return p.stdout, p.stderr


def table(out):
    """{(account, run): columns} from the side-by-side table."""
    rows, inside = {}, False
    for line in out.splitlines():
        if line.startswith("account "):
            inside = True
            continue
        if inside and line.startswith("{"):
            break
        if inside:
            f = line.split()
            rows[(f[0], f[1])] = f
    return rows


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def test_report_matches_fixture():
    sacct = os.path.join(FIX, "sacct.txt")
    rows, never, waits = fixture_counts(sacct)
    jobs = sum(len(w) for w in waits.values())
    check(rows >= 200 and never > 0 and len(waits) >= 4, f"the fixture has {rows} rows, {never} never ran")
    with tempfile.TemporaryDirectory() as d:
        out, _ = run_sim(sacct, ("--out", d, "--no-plots"))
        with open(os.path.join(d, "slurm.txt")) as f:
            check(f.read() in out, "--out's slurm.txt is the table on stdout")
    check(f"slurm: {rows} rows: {jobs} jobs replayed, {never} never ran" in out, "totals line:\n" + out)
    t = table(out)
    for account, w in waits.items():
        for run in ("slurm", "gpupool", "fifo"):
            check(int(t[(account, run)][2]) == len(w), f"{account} {run}: jobs {t[(account, run)][2]} != {len(w)}")
        slurm = t[(account, "slurm")]
        check(abs(float(slurm[3]) - sum(w) / len(w)) <= 0.5, f"{account}: Slurm mean wait {slurm[3]}")
        check(float(slurm[4]) == p95(w), f"{account}: Slurm p95 wait {slurm[4]} != {p95(w)}")
    check(int(t[("(all)", "slurm")][2]) == jobs, "all jobs")
    allw = [x for w in waits.values() for x in w]
    check(float(t[("(all)", "slurm")][4]) == p95(allw), "p95 of all")
    print(f"ok: {rows} rows, {jobs} jobs, {never} never ran, {len(waits)} accounts")


def test_bad_rows_are_skipped_and_named():
    with open(os.path.join(FIX, "sacct.txt")) as f:
        lines = f.read().splitlines()
    lines[3] = lines[3].replace("|2026-", "|yesterday-", 1)      # a Submit that is no time
    lines[10] = "|".join(lines[10].split("|")[:5])                # a cut row
    lines[20] = lines[20].replace("gres/gpu", "gres/gpu=x,", 1)  # a TRES that is no count
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        bad = f.name
    try:
        out, err = run_sim(bad)
    finally:
        os.unlink(bad)
    check("3 malformed (lines 4, 11, 21)" in out, "malformed rows:\n" + out)
    check(err.count("(row skipped)") == 3, "warnings:\n" + err)
    print("ok: 3 bad rows skipped and named")


if __name__ == "__main__":
    test_report_matches_fixture()
    test_bad_rows_are_skipped_and_named()
