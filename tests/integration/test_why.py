#!/usr/bin/env python3
"""`gpupool why` and GET /v1/jobs/{id}: every blocker of a pending job.

The pass stops at the first blocker it meets; a person needs all of them.
Issue 32 item 5: a job told to raise platform/eval's limit then found the
parent's; a gang told to raise its limit then learned no block could hold
it; "wait for jobs under X to end" appeared with 0 in use.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

# platform/eval may use 8 H100, platform 12: a 16-GPU job passes neither
TENANTS = """\
tenants:
  - path: platform
    limit: {gpu: {H100: 12}}
  - path: platform/eval
    limit: {gpu: {H100: 8}}
"""


def apply(d, text):
    path = os.path.join(d.dir, "tenants.yaml")
    with open(path, "w") as f:
        f.write(text)
    d.cli("apply", "-f", path)


def pending(d, body):
    job_id = d.ok("POST", "/v1/jobs", body)["id"]
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job_id).get("wait", {}).get("code") != "new",
                 what="a pass")
    return job_id


def codes(view):
    return [(b["code"], b.get("tenant")) for b in view["blockers"]]


def test_every_limit_on_the_path_and_the_shape(d):
    apply(d, TENANTS)
    # 2 x 8 in one block: blk-a and blk-b hold two 8-GPU nodes each, so it fits the registered fleet
    job_id = pending(d, {"tenant": "platform/eval", "replicas": 2, "gpus": 8, "gpu_types": ["H100"],
                         "topology": "block"})
    view = d.ok("GET", "/v1/jobs/%d" % job_id)
    assert view["wait"]["code"] == "limit" and view["wait"]["tenant"] == "platform/eval", view["wait"]
    assert codes(view) == [("limit", "platform/eval"), ("limit", "platform")], view["blockers"]
    out = d.cli("why", str(job_id)).stdout
    assert "the limit of platform/eval on H100: 0 in use + 16 asked > 8" in out, out
    assert "the limit of platform on H100: 0 in use + 16 asked > 12" in out, out
    assert "wait for" not in out, out  # nothing of platform runs: waiting lifts nothing
    assert "gpupool quota set platform --limit H100=16" in out, out
    # one node of each block drained: no block holds two empty nodes any more
    d.cli("drain", "h100-a-1")
    d.cli("drain", "h100-b-1")
    gpd.wait_for(lambda: any(b["code"] == "topology" for b in d.ok("GET", "/v1/jobs/%d" % job_id)["blockers"]),
                 what="the shape blocker")
    view = d.ok("GET", "/v1/jobs/%d" % job_id)
    assert view["wait"]["code"] == "limit", view["wait"]  # the pass's own reason is as before
    assert codes(view) == [("topology", None), ("limit", "platform/eval"), ("limit", "platform")], view["blockers"]
    topo = view["blockers"][0]
    assert topo["largest"] == 8 and topo["needed"] == 16, topo
    out = d.cli("why", str(job_id)).stdout
    assert "raising it alone starts nothing" in out, out
    assert "have an admin raise it" not in out, out


def second_of(d, first, second):
    """The view of job `second`, submitted once job `first` runs."""
    apply(d, TENANTS)
    running = pending(d, first)
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % running)["state"] == "running", what="the first job to bind")
    return d.ok("GET", "/v1/jobs/%d" % pending(d, second))


def test_wait_advice_only_with_jobs_in_use(d):
    view = second_of(d, {"tenant": "platform/eval", "gpus": 8, "gpu_types": ["H100"]},
                     {"tenant": "platform/eval", "gpus": 4, "gpu_types": ["H100"]})
    job_id = view["id"]
    assert codes(view) == [("limit", "platform/eval")], view["blockers"]  # platform: 8 + 4 fits 12
    out = d.cli("why", str(job_id)).stdout
    assert "wait for the 8 in use under platform/eval to end" in out, out


def test_a_job_waiting_for_capacity_says_so(d):
    a100 = {"tenant": "platform/eval", "gpus": 8, "gpu_types": ["A100"]}
    view = second_of(d, a100, a100)
    assert [b["code"] for b in view["blockers"]] == ["reserved"], view  # first in line: the pass says so
    assert all("blockers" not in j for j in d.ok("GET", "/v1/jobs")["jobs"])  # lists do not pay for it


if __name__ == "__main__":
    gpd.run([test_every_limit_on_the_path_and_the_shape, test_wait_advice_only_with_jobs_in_use,
             test_a_job_waiting_for_capacity_says_so])
