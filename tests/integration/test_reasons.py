#!/usr/bin/env python3
"""Reasons a person can act on, over HTTP.

A job that can never fit as the fleet stands is kept pending with a reason
that says so and why (never "waiting for room"); quota errors state GPU
amounts in GPUs; a shared job's placement lists each GPU once per replica,
with the replica's share.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

MPS_FLEET = """\
pools:
  - name: default
    score: default
nodes:
  - name: mps-0
    zone: z
    block: b
    gpu_type: H100
    gpus: 2
    gpu_mem_mib: 81920
    cpu_millis: 64000
    mem_mib: 524288
    sharing: mps
  - name: x-0
    zone: z
    block: b
    gpu_type: L40S
    gpus: 2
    gpu_mem_mib: 49152
    cpu_millis: 64000
    mem_mib: 524288
"""


def reason(d, job_id):
    return d.ok("GET", "/v1/jobs/%d" % job_id)["reason"]


def pending_reason(d, body):
    job_id = d.ok("POST", "/v1/jobs", body)["id"]
    gpd.wait_for(lambda: not reason(d, job_id).startswith("waiting for the next"), what="a pass")
    view = d.ok("GET", "/v1/jobs/%d" % job_id)
    assert view["state"] == "pending", view
    return view["reason"]


def test_jobs_that_can_never_fit_say_why(d):
    d.cli("apply", "-f", gpd.TENANTS)
    cases = [
        # MPS, but no GPU of the fleet is in MPS mode
        ({"tenant": "research/nlp", "share": {"mps": 30}, "replicas": 2}, "is in MPS mode"),
        # a MIG profile on a type with no MIG GPU (L40S is not MIG-capable)
        ({"tenant": "research/nlp", "share": {"mig": "1g.10gb"}, "gpu_types": ["L40S"]}, "MIG mode"),
        # time-slicing on exclusive GPUs
        ({"tenant": "research/nlp", "share": {"timeslice": True}, "kind": "interactive"}, "time-slice mode"),
        # more GPUs than any fabric block holds (blocks of 16 H100)
        ({"tenant": "research/nlp", "replicas": 3, "gpus": 8, "gpu_types": ["H100"], "topology": "block"},
         "even when empty"),
        # more than a node's NVLink domain
        ({"tenant": "research/nlp", "replicas": 2, "gpus": 8, "gpu_types": ["H100"], "topology": "nvlink"},
         "even when empty"),
        # above the tenant's limit (research/vision: 24 H100) even with nothing running
        ({"tenant": "research/vision", "replicas": 4, "gpus": 8, "gpu_types": ["H100"]},
         "cannot run while the limit stands"),
    ]
    for body, says in cases:
        # "wait_for_fleet": the fleet's shape would refuse the first five at submit (test_never_fits.py)
        text = pending_reason(d, dict(body, wait_for_fleet=True))
        assert says in text and "waiting for room" not in text, (body, text)


def test_quota_errors_state_gpus(d):
    d.cli("apply", "-f", gpd.TENANTS)
    st, out = d.call("PUT", "/v1/tenants/research/nlp", {"guarantee": {"gpu": {"H100": 20.5}}})
    assert st == 422 and out["error"]["field"] == "guarantee", out
    msg = out["error"]["message"]
    assert "28.5 H100 GPUs" in msg and "24 H100 GPUs" in msg and "000" not in msg, msg


def test_a_shared_placement_lists_each_gpu_once(d):
    d.stop()
    fleet = os.path.join(d.dir, "fleet.yaml")
    with open(fleet, "w") as f:
        f.write(MPS_FLEET)
    mps = gpd.Daemon(workdir=d.dir, fleet=fleet)
    mps.start()
    try:
        mps.ok("PUT", "/v1/tenants/org", {})
        job = mps.ok("POST", "/v1/jobs", {"tenant": "org", "share": {"mps": 30}, "replicas": 2})["id"]
        gpd.wait_for(lambda: mps.ok("GET", "/v1/jobs/%d" % job)["state"] == "running", what="MPS job running")
        placement = mps.ok("GET", "/v1/jobs/%d" % job)["placement"]
        assert len(placement) == 2, placement
        for rep in placement:
            assert rep["node"] == "mps-0" and len(rep["gpus"]) == 1, placement
            assert rep["slice"] == {"kind": "mps", "milli_gpus": 300}, placement
        whole = mps.ok("POST", "/v1/jobs", {"tenant": "org", "gpus": 2, "gpu_types": ["L40S"]})["id"]
        gpd.wait_for(lambda: mps.ok("GET", "/v1/jobs/%d" % whole)["state"] == "running", what="L40S job running")
        rep = mps.ok("GET", "/v1/jobs/%d" % whole)["placement"]
        assert len(rep) == 1 and sorted(rep[0]["gpus"]) == ["x-0/0", "x-0/1"] and "slice" not in rep[0], rep
    finally:
        mps.stop()
    d.start()


if __name__ == "__main__":
    gpd.run([test_jobs_that_can_never_fit_say_why, test_quota_errors_state_gpus, test_a_shared_placement_lists_each_gpu_once])
