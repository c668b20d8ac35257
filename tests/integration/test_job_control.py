#!/usr/bin/env python3
"""Hold, release and update of pending jobs (PATCH /v1/jobs/{id}, issue 32 item 9).

A real gpupoold (examples/fleet.yaml, examples/tenants.yaml); research/nlp
is limited to 1 H100 so that a second job waits.  alice and bob are members
of research/nlp.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

NLP_ONE = {"guarantee": {"gpu": {"H100": 1}}, "limit": {"gpu": {"H100": 1}},
           "time_limit": {"training": 259200}}


def setup(d):
    d.cli("apply", "-f", gpd.TENANTS)
    d.ok("PUT", "/v1/tenants/research/nlp", NLP_ONE)
    toks = {}
    for name, spec in (("alice", {"role": "member", "scope": "research/nlp", "user": "alice"}),
                       ("bob", {"role": "member", "scope": "research/nlp", "user": "bob"}),
                       ("auditor", {"role": "auditor"})):
        toks[name] = d.ok("POST", "/v1/tokens", dict(spec, name=name))["token"]
    return toks


def submit(d, tok):
    return d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["H100"], "checkpoint_grace_s": 0}, token=tok)


def get(d, job):
    return d.ok("GET", "/v1/jobs/%d" % job["id"])


def test_held_job_is_not_placed_until_released(d):
    toks = setup(d)
    first = submit(d, toks["alice"])
    second = submit(d, toks["alice"])
    assert first["state"] == "running" and second["state"] == "pending", (first, second)
    held = d.ok("PATCH", "/v1/jobs/%d" % second["id"], {"hold": True}, token=toks["alice"])
    assert held["held"] is True and held["reason"].startswith("held by alice"), held
    assert held["wait"]["code"] == "held", held
    # room frees: a later job of the same tenant runs, the held one stays
    d.ok("DELETE", "/v1/jobs/%d" % first["id"])
    third = submit(d, toks["alice"])
    assert third["state"] == "running", third
    again = get(d, second)
    assert again["state"] == "pending" and again["reason"].startswith("held by alice"), again
    assert any(h["kind"] == "update" and h["reason"] == "held by alice" for h in again["history"]), again
    d.ok("DELETE", "/v1/jobs/%d" % third["id"])
    out = d.cli("release", str(second["id"]), token=toks["alice"]).stdout
    assert out.startswith("job %d: " % second["id"]) and "held" not in out, out
    gpd.wait_for(lambda: get(d, second)["state"] == "running", what="the released job to run")


def test_update_changes_priority_and_time_limit(d):
    toks = setup(d)
    submit(d, toks["alice"])
    waiting = submit(d, toks["alice"])
    out = d.cli("update", str(waiting["id"]), "--time-limit", "2h", "--priority", "5").stdout
    assert out.startswith("job %d: pending" % waiting["id"]), out
    job = get(d, waiting)
    assert job["time_limit_s"] == 7200 and job["priority"] == 5, job
    assert job["effective_time_limit_s"] == 7200, job
    # the tenant's default is the most a job may have, as at submit
    st, err = d.call("PATCH", "/v1/jobs/%d" % waiting["id"], {"time_limit_s": 259201})
    assert st == 400 and err["error"]["field"] == "time_limit_s", (st, err)
    for body, field in (({"hold": "yes"}, "hold"), ({"priority": 5000}, "priority"), ({"gpus": 2}, "gpus"),
                        ({"time_limit_s": "soon"}, "time_limit_s"), ({}, "hold")):
        st, err = d.call("PATCH", "/v1/jobs/%d" % waiting["id"], body)
        assert st == 400 and err["error"]["field"] == field, (body, st, err)
    assert get(d, waiting)["time_limit_s"] == 7200


def test_only_pending_jobs_change(d):
    toks = setup(d)
    running = submit(d, toks["alice"])
    for body, field in (({"hold": True}, "hold"), ({"priority": 3}, "priority"), ({"time_limit_s": 60}, "time_limit_s")):
        st, err = d.call("PATCH", "/v1/jobs/%d" % running["id"], body)
        assert st == 409 and err["error"]["field"] == field and "running" in err["error"]["message"], (st, err)
    d.ok("DELETE", "/v1/jobs/%d" % running["id"])
    gpd.wait_for(lambda: get(d, running)["state"] == "cancelled", what="the cancel")
    st, err = d.call("PATCH", "/v1/jobs/%d" % running["id"], {"hold": True})
    assert st == 409 and err["error"]["field"] == "hold" and "cancelled" in err["error"]["message"], (st, err)
    st, err = d.call("PATCH", "/v1/jobs/999", {"hold": True})
    assert st == 404 and err["error"]["field"] == "id", (st, err)
    r = d.cli("hold", str(running["id"]), check=False)
    assert r.returncode != 0 and "cancelled" in r.stderr, (r.returncode, r.stderr)


def test_a_member_changes_only_its_own_jobs(d):
    toks = setup(d)
    submit(d, toks["alice"])
    alices = submit(d, toks["alice"])
    for who in ("bob", "auditor"):
        st, err = d.call("PATCH", "/v1/jobs/%d" % alices["id"], {"hold": True}, token=toks[who])
        assert st == 403, (who, st, err)
    r = d.cli("hold", str(alices["id"]), token=toks["bob"], check=False)
    assert r.returncode != 0, r
    job = get(d, alices)
    assert job["held"] is False and not job["reason"].startswith("held"), job
    assert not any(h["kind"] == "update" for h in job["history"]), job
    # another tenant's job is not there for a member at all
    other = d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1})
    st, err = d.call("PATCH", "/v1/jobs/%d" % other["id"], {"hold": True}, token=toks["alice"])
    assert st == 404, (st, err)
    # an admin holds anyone's; the hold names the admin, and bob cannot release it
    held = d.ok("PATCH", "/v1/jobs/%d" % alices["id"], {"hold": True})
    assert held["reason"].startswith("held by "), held
    st, _ = d.call("PATCH", "/v1/jobs/%d" % alices["id"], {"hold": False}, token=toks["bob"])
    assert st == 403 and get(d, alices)["held"] is True


def test_hold_survives_a_restart(d):
    toks = setup(d)
    submit(d, toks["alice"])
    waiting = submit(d, toks["alice"])
    d.ok("PATCH", "/v1/jobs/%d" % waiting["id"], {"hold": True, "priority": 7}, token=toks["alice"])
    d.stop()
    d.start()
    job = get(d, waiting)
    assert job["held"] is True and job["reason"].startswith("held by alice"), job
    assert job["priority"] == 7, job
    d.ok("PATCH", "/v1/jobs/%d" % waiting["id"], {"hold": False}, token=toks["alice"])
    assert get(d, waiting)["held"] is False


def live(d, job):
    return get(d, job)["state"] in ("pending", "admitted", "running", "preempting")


def test_a_member_cancels_only_its_own_jobs_unless_its_tenant_says_tenant(d):
    toks = setup(d)
    alices = submit(d, toks["alice"])
    st, err = d.call("DELETE", "/v1/jobs/%d" % alices["id"], token=toks["bob"])
    assert st == 403 and err["error"]["field"] == "id", (st, err)
    r = d.cli("cancel", "--user", "alice", token=toks["bob"], check=False)
    assert r.returncode != 0, (r.stdout, r.stderr)
    assert live(d, alices)
    # only an admin opens a tenant's jobs to all its members
    ta = d.ok("POST", "/v1/tokens", {"name": "ta", "role": "tenant-admin", "scope": "research"})["token"]
    st, err = d.call("PATCH", "/v1/tenants/research/nlp", {"cancel": "tenant"}, token=ta)
    assert st == 403 and err["error"]["field"] == "cancel", (st, err)
    st, err = d.call("PATCH", "/v1/tenants/research/nlp", {"cancel": "everyone"})
    assert st == 400 and err["error"]["field"] == "cancel", (st, err)
    assert live(d, alices)
    # set on the parent, inherited by research/nlp
    d.ok("PATCH", "/v1/tenants/research", {"cancel": "tenant"})
    assert d.ok("GET", "/v1/tenants/research")["cancel"] == "tenant"
    d.ok("DELETE", "/v1/jobs/%d" % alices["id"], token=toks["bob"])
    assert not live(d, alices) or get(d, alices)["state"] == "preempting"
    # the tenant itself says own again: its members are back to their own jobs
    d.ok("PATCH", "/v1/tenants/research/nlp", {"cancel": "own"})
    again = submit(d, toks["alice"])
    st, _ = d.call("DELETE", "/v1/jobs/%d" % again["id"], token=toks["bob"])
    assert st == 403 and live(d, again)
    # hold stays the owner's whatever cancel says
    d.ok("PATCH", "/v1/tenants/research/nlp", {"cancel": "tenant"})
    waiting = submit(d, toks["alice"])
    st, _ = d.call("PATCH", "/v1/jobs/%d" % waiting["id"], {"hold": True}, token=toks["bob"])
    assert st == 403


def test_cancel_by_filter(d):
    toks = setup(d)
    jobs = {}
    for who, name in (("alice", "sweep"), ("alice", "sweep"), ("bob", "sweep"), ("bob", "eval")):
        body = {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["H100"], "name": name, "checkpoint_grace_s": 0}
        j = d.ok("POST", "/v1/jobs", body, token=toks[who])
        jobs.setdefault((who, name), []).append(j)
    other = d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1, "name": "sweep"})
    r = d.cli("cancel", "--state", "pending", check=False)  # a state alone would take every tenant's jobs
    assert r.returncode == 2, (r.returncode, r.stderr)
    out = d.cli("cancel", "--user", "bob", "--state", "pending").stdout
    assert len(out.splitlines()) == 2 and all(" cancelled" in line for line in out.splitlines()), out
    assert not live(d, jobs[("bob", "sweep")][0]) and not live(d, jobs[("bob", "eval")][0])
    assert all(live(d, j) for j in jobs[("alice", "sweep")])
    out = d.cli("cancel", "--name", "sweep", "--tenant", "research/nlp").stdout
    assert all(not live(d, j) or get(d, j)["state"] == "preempting" for j in jobs[("alice", "sweep")]), out
    assert live(d, other)
    assert d.cli("cancel", "--name", "nothing-by-this-name").stdout.strip() == "no job matches"


def test_a_draining_node_becomes_drained_and_lists_its_jobs(d):
    toks = setup(d)
    job = submit(d, toks["alice"])
    node = job["placement"][0]["node"]
    hidden = d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 8, "gpu_types": ["H100"]})
    view = d.ok("GET", "/v1/nodes/" + node)
    assert job["id"] in view["jobs"] and view["drained"] is False, view
    mine = d.ok("GET", "/v1/nodes/" + node, token=toks["alice"])
    assert hidden["id"] not in mine["jobs"] and job["id"] in mine["jobs"], mine
    d.ok("POST", "/v1/nodes/%s/drain" % node)
    view = d.ok("GET", "/v1/nodes/" + node)
    assert view["draining"] is True and view["drained"] is False, view
    assert "draining" in [l for l in d.cli("nodes").stdout.splitlines() if l.startswith(node + " ")][0]
    d.ok("DELETE", "/v1/jobs/%d" % job["id"])
    if hidden["placement"] and hidden["placement"][0]["node"] == node:
        d.ok("DELETE", "/v1/jobs/%d" % hidden["id"])
    gpd.wait_for(lambda: d.ok("GET", "/v1/nodes/" + node)["drained"], what="the node to be drained")
    lines = d.cli("nodes").stdout.splitlines()
    line = [l for l in lines if l.startswith(node + " ")][0]
    state = lines[0].split().index("STATE")  # REASON follows it
    assert line.split()[state] == "drained", line
    out = d.cli("nodes", "show", node).stdout
    assert ", drained" in out and "jobs: none" in out, out
    st, err = d.call("GET", "/v1/nodes/" + node[:-1] + "x" + node[-1])
    assert st == 404 and "did you mean" in err["error"]["message"], (st, err)


if __name__ == "__main__":
    gpd.run([test_held_job_is_not_placed_until_released, test_update_changes_priority_and_time_limit,
             test_only_pending_jobs_change, test_a_member_changes_only_its_own_jobs, test_hold_survives_a_restart,
             test_a_member_cancels_only_its_own_jobs_unless_its_tenant_says_tenant, test_cancel_by_filter,
             test_a_draining_node_becomes_drained_and_lists_its_jobs])
