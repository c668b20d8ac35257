#!/usr/bin/env python3
"""Allocated vs used (docs/metering.md) against a real gpupoold, with fake agents.

Two T4 nodes (test_agent_api.FakeAgent) each run one job of its own tenant
and heartbeat its GPU's telemetry: `busy` at 90 % SM, `idle` at 3 % SM
with 1,000 MiB.  Behaviours under test:
  - GET /v1/usage's allocated_vs_used: the busy tenant's used GPU-hours
    are about 0.9 of its heartbeat seconds, the idle tenant's about 0.03,
    and idle-held = allocated - used; the old "usage" rows stay;
  - GET /v1/usage/underdriven?sm=10&for=1 lists the idle job (not the busy
    one) with its peaks and an MPS share that fits them; sm=95 lists both;
  - a restart of gpupoold keeps the counters (job_use, schema 6);
  - `gpupool usage --under-sm 10 --under-for 1s` shows the columns and
    flags the idle job.
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_agent_api import FakeAgent, job, mine, submit  # noqa: E402


def running(agent, job_id, sm, mem):
    a = mine(agent.poll(), job_id)[0]
    return {"job": job_id, "replica": a["replica"], "pid": 100 + job_id, "state": "running",
            "gpus": [{"uuid": a["gpus"][0], "sm_active_pct": sm, "memory_used_mib": mem}]}


def beat(agent, entry):
    status, out = agent.call("POST", "heartbeat", {"running": [entry]})
    assert status == 200, out


def start_two(d):
    for t in ("busy", "idle"):
        d.ok("PUT", "/v1/tenants/%s" % t, {})
    n1, n2 = FakeAgent(d, "t4-1", gpus=1), FakeAgent(d, "t4-2", gpus=1)
    jobs = {t: submit(d, tenant=t) for t in ("busy", "idle")}
    for j in jobs.values():
        gpd.wait_for(lambda j=j: job(d, j)["state"] == "running", what="job %d running" % j)
    holder = {t: (n1 if mine(n1.poll(), j) else n2) for t, j in jobs.items()}
    return jobs, holder


def beat_for(jobs, holder, seconds):
    entries = {"busy": running(holder["busy"], jobs["busy"], 90, 8000),
               "idle": running(holder["idle"], jobs["idle"], 3, 1000)}
    t0 = time.time()
    while time.time() - t0 < seconds:
        for t in ("busy", "idle"):
            beat(holder[t], entries[t])
        time.sleep(0.5)
    return time.time() - t0


def rows(d):
    return {r["tenant"]: r for r in d.ok("GET", "/v1/usage")["allocated_vs_used"]}


def test_used_follows_sm_activity_and_survives_a_restart(d):
    jobs, holder = start_two(d)
    span = beat_for(jobs, holder, 4)
    # counted seconds: first beat to last (the first beat of a node counts none)
    gpd.wait_for(lambda: rows(d)["busy"]["used_gpu_hours"] * 3600 > 0.9 * (span - 1), 15, "the flush (5 s)")
    out = d.ok("GET", "/v1/usage")
    assert out["usage"] and "gpu_seconds" in out["usage"][0], out  # the old rows stay
    r = rows(d)
    busy, idle = r["busy"], r["idle"]
    assert busy["gpu_type"] == "T4" and idle["gpu_type"] == "T4", r
    assert busy["used_gpu_hours"] * 3600 <= 0.9 * span + 1e-6, busy
    assert 0 < idle["used_gpu_hours"] * 3600 <= 0.03 * span + 1e-6, idle
    for x in (busy, idle):
        assert abs(x["idle_held_gpu_hours"] - (x["allocated_gpu_hours"] - x["used_gpu_hours"])) < 1e-6, x
        assert x["lost_gpu_hours"] == 0
    assert idle["idle_held_gpu_hours"] > busy["idle_held_gpu_hours"], r
    d.stop()
    d.start()
    after = rows(d)
    assert abs(after["busy"]["used_gpu_hours"] - busy["used_gpu_hours"]) < 1e-9, (after, busy)
    assert abs(after["idle"]["used_gpu_hours"] - idle["used_gpu_hours"]) < 1e-9, (after, idle)


def test_underdriven_lists_the_idle_job_with_a_share_that_fits(d):
    jobs, holder = start_two(d)
    beat_for(jobs, holder, 3)
    out = d.ok("GET", "/v1/usage/underdriven?sm=10&for=1")
    listed = {j["job"]: j for j in out["jobs"]}
    assert set(listed) == {jobs["idle"]}, out
    j = listed[jobs["idle"]]
    assert j["tenant"] == "idle" and j["peak_sm_pct"] == 3 and j["peak_memory_mib"] == 1000 and j["below_s"] >= 1
    assert j["suggest"]["mps_pct"] == 10 and j["suggest"]["mig"] is None, j  # T4: no MIG; 1,000 of 16,384 MiB
    both = d.ok("GET", "/v1/usage/underdriven?sm=95&for=1")["jobs"]
    assert {x["job"] for x in both} == set(jobs.values()), both
    assert d.ok("GET", "/v1/usage/underdriven?sm=10&for=3600")["jobs"] == []
    text = d.cli("usage", "--under-sm", "10", "--under-for", "1s").stdout
    assert "IDLE-HELD" in text and "under-driven (below 10% SM for 1s or more)" in text, text
    line = [x for x in text.splitlines() if x.split()[:2] == [str(jobs["idle"]), "idle"]]
    assert line and line[0].endswith("MPS 10%"), text
    assert not [x for x in text.splitlines() if x.split()[:2] == [str(jobs["busy"]), "busy"]], text
    status, err = d.call("GET", "/v1/usage/underdriven?sm=0")
    assert status == 400 and err["error"]["field"] == "sm", err


if __name__ == "__main__":
    gpd.run([test_used_follows_sm_activity_and_survives_a_restart,
             test_underdriven_lists_the_idle_job_with_a_share_that_fits])
