#!/usr/bin/env python3
"""restart_policy and the end of a time-limit grace, through a fake agent.

A fake agent (test_agent_api.FakeAgent) reports its replicas' exits as
gpupool-agent does.

Behaviours under test:
  - an inference job (restart_policy on-failure by default) whose replica
    fails is requeued whole, not failed: pending with wait `backoff` and
    its time, the history says why; it binds again after the back-off
    with restart_count 1 in its assignments; with no restarts left the
    next failure fails it; gpupool-replay of the store finds every
    decision equal; each run keeps its own log, and `gpupool logs --follow`
    stays on the run it started on;
  - a job past its time limit whose replicas all exit 0 within the grace
    has succeeded (one that exits non-zero failed);
  - bad restart fields are 400 naming the field.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_agent_api import FakeAgent, exited, job, join_token, mine, submit  # noqa: E402
from test_job_logs import entry, read, ship  # noqa: E402


def two_nodes(d):
    d.ok("PUT", "/v1/tenants/t", {})
    join = join_token(d)
    return FakeAgent(d, "t4-1", join=join), FakeAgent(d, "t4-2", join=join)


def assigned(agents, job_id):
    return [a for n in agents for a in mine(n.poll(), job_id)]


def test_a_failed_inference_replica_restarts_the_job_whole_after_a_backoff(d):
    n1, n2 = two_nodes(d)
    job_id = submit(d, replicas=2, gpus=2, kind="inference", max_restarts=1)
    gpd.wait_for(lambda: job(d, job_id)["state"] == "running", what="service running")
    first = {n.name: mine(n.poll(), job_id)[0] for n in (n1, n2)}
    assert all(a["restart_count"] == 0 for a in first.values()), first
    a1 = first["t4-1"]
    ship(n1, entry(a1, 0, "first\n"))
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, HOME=d.dir)
    follow = subprocess.Popen([os.path.join(gpd.BIN, "gpupool"), "logs", str(job_id), "--replica",
                               str(a1["replica"]), "--follow"], env=env, stdout=subprocess.PIPE, text=True)
    assert follow.stdout.readline() == "first\n"
    [r] = n1.report(exited(a1, code=1))
    view = job(d, job_id)
    assert view["state"] == "pending" and view["restarts"] == 1, view
    assert view["wait"]["code"] == "backoff" and view["wait"]["time"] >= view["submit_time"] + 10, view["wait"]
    assert "restart 1 of 1" in view["reason"], view["reason"]
    assert any("requeued: a replica failed" in (h.get("reason") or "") for h in view["history"]), view["history"]
    assert assigned((n1, n2), job_id) == []  # both replicas stopped: the gang restarts whole
    assert "back-off (restart 1 of 1)" in d.cli("why", str(job_id)).stdout
    again = gpd.wait_for(lambda: (lambda v: v if v["state"] == "running" else None)(job(d, job_id)), timeout=40,
                         what="bound again after the back-off")
    assert again["bind_time"] >= view["wait"]["time"], (again["bind_time"], view["wait"])
    second = assigned((n1, n2), job_id)
    assert len(second) == 2 and all(a["restart_count"] == 1 for a in second), second
    # the first run's last bytes still arrive; a follow stays on its run (the next has offsets of its own)
    ship(n1, entry(a1, 6, "bye\n", eof=True))
    assert follow.stdout.read() == "bye\n" and follow.wait(timeout=20) == 0
    a1b = [a for a in second if a["replica"] == a1["replica"]][0]
    node = n1 if a1b["gpus"][0].startswith("GPU-t4-1") else n2
    ship(node, entry(a1b, 0, "second\n"))
    assert d.cli("logs", str(job_id), "--replica", str(a1["replica"])).stdout == "second\n"
    out, text = read(d, job_id, "?replica=%d&run=%d" % (a1["replica"], a1["bind_time"]))
    assert text == "first\nbye\n" and out["runs"] == [a1b["bind_time"], a1["bind_time"]], out
    n1.report(exited(second[0], code=0, signal=9, reason="signalled"))
    view = job(d, job_id)
    assert view["state"] == "failed" and "no restarts left (1 of 1 used)" in view["reason"], view
    d.stop()
    p = subprocess.run([os.path.join(gpd.BIN, "gpupool-replay"), os.path.join(d.dir, "gpupool.db")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "all equal" in p.stdout, p.stdout + p.stderr
    d.start()


def test_exit_zero_within_a_time_limit_grace_succeeds(d):
    n1, n2 = two_nodes(d)
    ok = submit(d, replicas=2, gpus=1, time_limit_s=1, grace=60)
    gpd.wait_for(lambda: job(d, ok)["state"] == "preempting", what="past its time limit")
    stops = assigned((n1, n2), ok)
    assert len(stops) == 2 and all(a["action"] == "stop" and a["stop_reason"] == "time_limit" for a in stops), stops
    for a in stops:
        node = n1 if a["gpus"][0].startswith("GPU-t4-1") else n2
        node.report(exited(a))
    view = job(d, ok)
    assert view["state"] == "succeeded", (view["state"], view["reason"])
    bad = submit(d, replicas=1, gpus=1, time_limit_s=1, grace=60)
    gpd.wait_for(lambda: job(d, bad)["state"] == "preempting", what="past its time limit")
    [a] = assigned((n1, n2), bad)
    node = n1 if a["gpus"][0].startswith("GPU-t4-1") else n2
    node.report(exited(a, code=2))
    view = job(d, bad)
    assert view["state"] == "failed" and "time_limit" in view["reason"], (view["state"], view["reason"])


def test_bad_restart_fields_name_the_field(d):
    d.ok("PUT", "/v1/tenants/t", {})
    for body, field in [({"restart_policy": "always"}, "restart_policy"),
                        ({"max_restarts": 0, "restart_policy": "on-failure"}, "max_restarts"),
                        ({"max_restarts": 2}, "max_restarts"),  # a training job never restarts by default
                        ({"max_restarts": 101, "kind": "inference"}, "max_restarts")]:
        status, out = d.call("POST", "/v1/jobs", dict({"tenant": "t", "gpus": 1}, **body))
        assert status == 400 and out["error"]["field"] == field, (body, status, out)
    out = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "restart_policy": "on-failure", "max_restarts": 5})
    view = d.ok("GET", "/v1/jobs/%d" % out["id"])
    assert view["restart_policy"] == "on-failure" and view["max_restarts"] == 5, view
    p = d.cli("submit", "--tenant", "t", "--gpus", "1", "--kind", "inference", "--restart-policy", "never",
              json_out=True)
    assert d.ok("GET", "/v1/jobs/%d" % p["id"])["restart_policy"] == "never"


if __name__ == "__main__":
    gpd.run([test_a_failed_inference_replica_restarts_the_job_whole_after_a_backoff,
             test_exit_zero_within_a_time_limit_grace_succeeds,
             test_bad_restart_fields_name_the_field])
