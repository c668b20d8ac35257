#!/usr/bin/env python3
"""Dedicated nodes through gpupoold (issue 31, section 4).

Each test starts a real gpupoold (examples/fleet.yaml: four 8-GPU H100
nodes, one A100, one L40S) with a fresh SQLite store:
  - a tenant's `nodes` is `shared` or `dedicated`, inherited as a floor:
    GET shows the effective value, `gpupool quota set --nodes` sets it,
    `"shared"` below a dedicated tenant and an unknown value are 400
    naming `nodes`, and nothing changes;
  - a job of another tenant never lands on a node where a dedicated
    tenant's job runs, although best fit would put it there (the node
    with the fewest free GPUs); a dedicated job that only such a node
    could hold waits with the code `dedicated` and `gpupool why` says so.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def node_of(d, job):
    placement = gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job).get("placement"), what="job %d placed" % job)
    return {rep["node"] for rep in placement}


def test_nodes_policy_is_inherited_and_refused_below_dedicated(d):
    d.ok("PUT", "/v1/tenants/secure", {"nodes": "dedicated"})
    d.ok("PUT", "/v1/tenants/secure/team", {})
    assert d.ok("GET", "/v1/tenants/secure/team")["nodes"] == "dedicated"
    before = d.ok("GET", "/v1/tenants")
    for body in ({"nodes": "shared"}, {"nodes": "exclusive"}, {"nodes": 1}):
        st, out = d.call("PUT", "/v1/tenants/secure/other", body)
        assert st == 400 and out["error"]["field"] == "nodes", (body, st, out)
    assert d.ok("GET", "/v1/tenants") == before
    d.ok("PUT", "/v1/tenants/lab", {})
    assert d.ok("GET", "/v1/tenants/lab")["nodes"] == "shared"
    d.cli("quota", "set", "lab", "--nodes", "dedicated")
    assert d.ok("GET", "/v1/tenants/lab")["nodes"] == "dedicated"


def test_no_job_of_another_tenant_shares_a_node_with_a_dedicated_one(d):
    d.ok("PUT", "/v1/tenants/secure", {"nodes": "dedicated"})
    d.ok("PUT", "/v1/tenants/lab", {})
    secure = d.ok("POST", "/v1/jobs", {"tenant": "secure", "gpus": 1, "gpu_types": ["H100"]})["id"]
    where = node_of(d, secure)
    lab = [d.ok("POST", "/v1/jobs", {"tenant": "lab", "gpus": 1, "gpu_types": ["H100"]})["id"] for _ in range(3)]
    for job in lab:
        assert not node_of(d, job) & where, (job, node_of(d, job), where)
    # a whole node for secure goes to an empty one, never to lab's
    big = d.ok("POST", "/v1/jobs", {"tenant": "secure", "gpus": 8, "gpu_types": ["H100"]})["id"]
    assert not node_of(d, big) & set().union(*(node_of(d, j) for j in lab))
    # all four H100 nodes at once: one runs lab's jobs, so secure waits for a node of its own
    wait = d.ok("POST", "/v1/jobs", {"tenant": "secure", "gpus": 8, "gpu_types": ["H100"], "replicas": 4})["id"]
    job = gpd.wait_for(lambda: (lambda j: j if j.get("wait", {}).get("code") not in (None, "new") else None)(
        d.ok("GET", "/v1/jobs/%d" % wait)), what="a wait")
    assert job["state"] == "pending" and job["wait"]["code"] == "dedicated", job
    assert job["wait"]["by"] == "own" and job["wait"]["tenant"] == "secure", job
    out = d.cli("why", str(wait)).stdout
    assert "secure has dedicated nodes" in out, out


if __name__ == "__main__":
    gpd.run([test_nodes_policy_is_inherited_and_refused_below_dedicated,
             test_no_job_of_another_tenant_shares_a_node_with_a_dedicated_one])
