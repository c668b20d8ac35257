"""A member's node views (issue 29, finding 6; src/server/api_fleet.c).

Tenant A (research/nlp) runs a job on an agent node; a member of tenant B
(product/ads), and a tenant-admin of product, ask GET /v1/nodes and GET /v1/nodes/NAME: neither shows A's
job id, its replica's pid or its GPU's use (SM, memory, power), while the
node's capacity, health and free counts stay; an admin sees them all, and
A's own member sees its job.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, end_replicas, sim_nodes, submit, wait_state, write_node_file  # noqa: E402


def member(d, scope, user):
    return d.ok("POST", "/v1/tokens", {"name": "m-" + user, "role": "member", "scope": scope, "user": user})["token"]


def running_pid(d, node, job):
    agent = d.ok("GET", "/v1/nodes/" + node)["agent"]
    return next((r["pid"] for r in (agent or {}).get("running") or [] if r["job"] == job and r.get("pid")), None)


def test_a_member_sees_no_other_tenants_job_on_a_node(d):
    for t in ("research", "research/nlp", "product", "product/ads"):
        d.ok("PUT", "/v1/tenants/" + t, {})
    node_file = write_node_file(d.dir, sim_nodes("n", 1, gpus=2))
    a = Agent(d, node_file, extra=["--heartbeat-s", "1", "--no-cgroups"]).start()
    job = None
    try:
        a.wait_up(["n-0"])
        job = submit(d, tenant="research/nlp")
        wait_state(d, job, "running")
        pid = gpd.wait_for(lambda: running_pid(d, "n-0", job), 30, "the replica's pid in the heartbeat")
        admin = d.ok("GET", "/v1/nodes/n-0")
        [index] = [g["index"] for g in admin["gpus"] if g.get("job") == job]
        b = member(d, "product/ads", "mallory")
        b_admin = d.ok("POST", "/v1/tokens", {"name": "ta", "role": "tenant-admin", "scope": "product"})["token"]
        for token in (b, b_admin):
            for path in ("/v1/nodes/n-0", "/v1/nodes"):
                st, out = d.call("GET", path, token=token)
                text = json.dumps(out)
                assert st == 200, (st, out)
                assert '"job": %d' % job not in text and '"pid"' not in text, (path, text)
                assert "research" not in text and "alice" not in text, (path, text)
        view = d.ok("GET", "/v1/nodes/n-0", token=b)
        assert (view["gpu_count"], view["gpus_free"], view["gpus_healthy"]) == (2, 1, 2), view
        assert view["agent"]["running"] == [] and view["agent"]["other_jobs"] == 1, view["agent"]
        held = [s for s in view["agent"]["gpus"] if s["index"] == index][0]
        assert held.get("other_tenant") is True and "sm_active_pct" not in held and "power_w" not in held, held
        assert "temperature_c" in held and "lost" in held, held  # its health stays
        free = [s for s in view["agent"]["gpus"] if s["index"] != index][0]
        assert "other_tenant" not in free and "sm_active_pct" in free, free
        # A's own member sees its job on the node
        own = d.ok("GET", "/v1/nodes/n-0", token=member(d, "research/nlp", "alice"))
        assert [r["job"] for r in own["agent"]["running"]] == [job] and own["agent"]["other_jobs"] == 0, own
        assert admin["agent"]["running"][0]["pid"] == pid
    finally:
        a.stop()
        end_replicas([a], [job] if job else [])


if __name__ == "__main__":
    gpd.run([test_a_member_sees_no_other_tenants_job_on_a_node], fleet=None)
