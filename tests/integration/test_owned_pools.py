#!/usr/bin/env python3
"""Pools owned by tenants through gpupoold and real agents (issue 31, section 4).

A real gpupoold (no fleet file) and one real gpupool-agent (sim backend)
driving two nodes of 2 H100 each: s-0 in pool "default" and a-0 in pool
"team-a".
  - PUT /v1/pools/team-a {"owner": "/org/a"} is admin-only (a tenant-admin
    gets 403 and nothing changes), an unknown tenant or field is 400 naming
    it, GET /v1/pools and `gpupool pools` show the owner, and the change is
    audited (pool.own);
  - /org/a with lend off: a job of /org/b never lands on a-0 while s-0 is
    full: it waits with the code `dedicated`, by "pool", and `gpupool why`
    names the pool and its owner;
  - lend on: it lands on a-0; then a job of /org/a arrives, /org/b's job is
    preempted with its grace (SIGTERM, the replica ends, the job goes back
    to pending) and /org/a's job runs on a-0.
A second daemon with a fleet file listing pool team-a without an owner
shows that an owner set by the API survives a restart.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, end_replicas, sim_nodes, submit, wait_state, write_node_file  # noqa: E402

DAEMON = {"fleet": None}


def start_agent(d):
    nodes = sim_nodes("s", 1) + sim_nodes("a", 1, pool="team-a")
    a = Agent(d, write_node_file(d.dir, nodes), extra=["--no-cgroups"]).start()
    a.wait_up(["s-0", "a-0"])
    return a


def node_of(d, job):
    placement = gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % job).get("placement"), what="job %d placed" % job)
    return {rep["node"] for rep in placement}


def waits(d, job):
    return gpd.wait_for(lambda: (lambda j: j if j.get("wait", {}).get("code") not in (None, "new") else None)(
        d.ok("GET", "/v1/jobs/%d" % job)), what="job %d waits" % job)


def pool_view(d, name):
    return next(p for p in d.ok("GET", "/v1/pools")["pools"] if p["name"] == name)


def test_only_an_admin_owns_a_pool_and_bad_input_changes_nothing(d):
    a = start_agent(d)
    try:
        for path in ("org", "org/a", "org/b"):
            d.ok("PUT", "/v1/tenants/" + path, {})
        tadmin = d.ok("POST", "/v1/tokens", {"name": "ta", "role": "tenant-admin", "scope": "org/a"})["token"]
        st, out = d.call("PUT", "/v1/pools/team-a", {"owner": "/org/a"}, token=tadmin)
        assert st == 403, (st, out)
        for body, field in (({"owner": "/org/nobody"}, "owner"), ({"owner": 7}, "owner"), ({}, "owner"),
                            ({"owner": "/org/a", "score": "spread"}, "score")):
            st, out = d.call("PUT", "/v1/pools/team-a", body)
            assert st == 400 and out["error"]["field"] == field, (body, st, out)
        st, out = d.call("PUT", "/v1/pools/no-such-pool", {"owner": "/org/a"})
        assert st == 404, (st, out)
        assert "owner" not in pool_view(d, "team-a")
        view = d.ok("PUT", "/v1/pools/team-a", {"owner": "/org/a"})
        assert view["owner"] == "/org/a" and view["lent"] is True, view  # lend defaults to yes
        listed = pool_view(d, "team-a")
        assert listed["owner"] == "/org/a" and listed["nodes"] == 1 and listed["gpus"] == 2, listed
        out = d.cli("pools").stdout
        assert "team-a" in out and "/org/a" in out, out
        rows = d.ok("GET", "/v1/audit?limit=1000")["audit"]
        assert any(r["action"] == "pool.own" and r["target"] == "pool/team-a" for r in rows), rows
        d.cli("pool", "disown", "team-a")
        assert "owner" not in pool_view(d, "team-a")
    finally:
        a.stop()


def test_an_owner_keeps_lends_and_takes_its_pool_back_with_grace(d):
    a = start_agent(d)
    jobs = []
    try:
        d.ok("PUT", "/v1/tenants/org", {})
        d.ok("PUT", "/v1/tenants/org/a", {"lend": False})
        d.ok("PUT", "/v1/tenants/org/b", {})
        d.cli("pool", "own", "team-a", "/org/a")
        fill = submit(d, tenant="org/b", gpus=2)
        jobs.append(fill)
        assert node_of(d, fill) == {"s-0"}
        b = submit(d, tenant="org/b", gpus=2)
        jobs.append(b)
        job = waits(d, b)
        assert job["state"] == "pending" and job["wait"]["code"] == "dedicated", job
        assert job["wait"]["by"] == "pool" and job["wait"]["pool"] == "team-a", job
        out = d.cli("why", str(b)).stdout
        assert "its free GPUs are in pool team-a owned by tenant org/a" in out, out
        assert d.ok("GET", "/v1/jobs/%d" % b)["state"] == "pending"  # still, after the CLI's look
        # the owner lends: b borrows the pool
        d.cli("quota", "set", "org/a", "--lend", "yes")
        assert node_of(d, b) == {"a-0"}
        wait_state(d, b, "running")
        assert pool_view(d, "team-a")["gpus_borrowed"] == 2
        # the owner's job takes it back: b's job is preempted with its grace and requeued
        mine = submit(d, tenant="org/a", gpus=2)
        jobs.append(mine)
        wait_state(d, mine, "running")
        assert node_of(d, mine) == {"a-0"}
        back = d.ok("GET", "/v1/jobs/%d" % b)
        assert back["state"] == "pending", back
        history = " ".join(h.get("reason", "") for h in back.get("history", []))
        assert "org/a takes its own pool back" in history, back
    finally:
        end_replicas([a], jobs)
        a.stop()


FLEET = """pools:
  - name: team-a
nodes:
  - name: a-0
    gpu_type: H100
    gpus: 2
    block: blk-a
    pool: team-a
"""


def test_an_owner_set_by_the_api_survives_a_restart_with_the_fleet_file(_):
    other = gpd.Daemon(fleet=None)
    with open(os.path.join(other.dir, "fleet.yaml"), "w") as f:
        f.write(FLEET)
    other.fleet = os.path.join(other.dir, "fleet.yaml")
    try:
        other.start()
        other.ok("PUT", "/v1/tenants/org", {})
        other.ok("PUT", "/v1/tenants/org/a", {})
        other.ok("PUT", "/v1/pools/team-a", {"owner": "org/a"})
        other.stop()
        other.start()  # the file lists team-a without an owner: the API's stays
        assert pool_view(other, "team-a")["owner"] == "/org/a", other.ok("GET", "/v1/pools")
        other.stop()
    finally:
        other.cleanup()


if __name__ == "__main__":
    gpd.run([test_only_an_admin_owns_a_pool_and_bad_input_changes_nothing,
             test_an_owner_keeps_lends_and_takes_its_pool_back_with_grace,
             test_an_owner_set_by_the_api_survives_a_restart_with_the_fleet_file], **DAEMON)
