#!/usr/bin/env python3
"""The node agents' HTTP API against a real gpupoold, with a fake agent.

The FakeAgent below speaks the protocol of docs/api.md ("Agents") the way
gpupool-agent's main loop will: register with a join token, long-poll its
assignments, heartbeat, report replicas' ends.  Agent nodes here have T4
GPUs, a type the --fleet file (examples/fleet.yaml) does not have, so jobs
asking for T4 land only on agent nodes while the fleet's static nodes stay
up beside them.

Behaviours under test:
  - a join token registers a node and gets a node credential; a bad or
    expired join token is 401; join and node tokens get 403 everywhere but
    their own agent endpoints; re-registering revokes the old credential;
  - a long-poll answers soon after a bind on its node (well before its
    wait), with the replicas, GPUs, peers, command and env; a shutdown
    answers waiting polls at once; a commit touching node A does not wake
    node B's poll (it answers at the end of its wait, unchanged, and
    gpupool_agent_poll_wakeups_total does not move), one touching B does;
  - a heartbeat of 0.9 MB (under --max-body) is taken whole;
  - reports: a replica started -> one history row "start" with its node and
    pid; every replica exited 0 -> succeeded (history says so, a resent
    report changes nothing); one failing replica -> the gang failed whole;
  - preemption: the victim's node gets "stop" with a kill deadline (in ms:
    the grace from the decision's real time); a
    checkpoint ends the grace (the deadline moves to now); the victim's
    exit report requeues it and the reclaimer binds long before the grace;
    the exit that ends a grace has its pass in its own batch: the reclaimer
    is bound when the report is answered, whatever --pass-min-ms;
  - a node silent past --node-lost-after is lost (its job requeued onto
    another agent node), its heartbeat is 409 until it registers again;
  - kill -9 of gpupoold: the same assignments after restart, a higher
    epoch and version, the node not lost at once; gpupool-replay of the
    store finds every decision equal (the agents' event kinds replay).
"""
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


class FakeAgent:
    def __init__(self, d, name, gpus=2, join=None):
        self.d, self.name = d, name
        self.inventory = {"name": name, "gpu_type": "T4", "gpu_count": gpus, "zone": "z1", "block": "blk-t",
                          "gpu_uuids": ["GPU-%s-%d" % (name, i) for i in range(gpus)], "gpu_mem_mib": 16384,
                          "cpu_millis": 32000, "mem_mib": 131072}
        self.token = None
        self.register(join or join_token(d))

    def register(self, join):
        out = self.d.ok("POST", "/v1/agents:register", {"node": self.inventory}, token=join)
        assert out["node"] == self.name and out["token"].startswith("gpt_"), out
        self.token = out["token"]
        return out

    def call(self, method, what, body=None):
        return self.d.call(method, "/v1/agents/%s/%s" % (self.name, what), body, token=self.token)

    def poll(self, after=0, wait=0):
        status, out = self.call("GET", "assignments?after=%d&wait=%d" % (after, wait))
        assert status == 200, out
        return out

    def heartbeat(self, running=()):
        return self.call("POST", "heartbeat", {"running": list(running), "gpus": [{"index": 0, "sm_util": 0.5}]})

    def report(self, *reports):
        status, out = self.call("POST", "reports", {"reports": list(reports)})
        assert status == 200, out
        return out["results"]


def join_token(d, ttl="1h"):
    out = d.cli("token", "create", "--name", "rack1", "--role", "join", "--nodes", "*", "--ttl", ttl,
                json_out=True)
    assert out["role"] == "join" and out["expires"], out
    return out["token"]


def submit(d, tenant="t", replicas=1, gpus=1, grace=30, **extra):
    body = dict({"tenant": tenant, "replicas": replicas, "gpus": gpus, "gpu_types": ["T4"],
                 "checkpoint_grace_s": grace, "command": ["python3", "train.py"], "env": {"SEED": "7"}}, **extra)
    return d.ok("POST", "/v1/jobs", body)["id"]


def job(d, job_id):
    return d.ok("GET", "/v1/jobs/%d" % job_id)


def mine(assignments, job_id):
    return [a for a in assignments["assignments"] if a["job"] == job_id]


def exited(a, code=0, signal=0, reason="exited"):
    return {"what": "exited", "job": a["job"], "replica": a["replica"], "bind_time": a["bind_time"],
            "exit_code": code, "signal": signal, "reason": reason}


def poll_until_closed(agent):
    """A long wait; the answer or a closed connection, either ends it."""
    try:
        agent.call("GET", "assignments?after=%d&wait=60" % (1 << 62))
    except OSError:
        pass


def test_join_token_registers_and_credentials_reach_only_their_node(d):
    join = join_token(d)
    n1, n2 = FakeAgent(d, "t4-1", join=join), FakeAgent(d, "t4-2", join=join)
    status, out = d.call("POST", "/v1/agents:register", {"node": n1.inventory}, token="gpt_" + "0" * 64)
    assert status == 401, out
    short = join_token(d, ttl="1s")
    time.sleep(2.1)
    status, out = d.call("POST", "/v1/agents:register", {"node": n1.inventory}, token=short)
    assert status == 401 and "expired" in out["error"]["message"], out
    for path in ["/v1/jobs", "/v1/nodes", "/v1/tenants", "/v1/tokens"]:
        assert d.call("GET", path, token=n1.token)[0] == 403, path
        assert d.call("GET", path, token=join)[0] == 403, path
    assert d.call("GET", "/v1/agents/t4-2/assignments", token=n1.token)[0] == 403
    assert d.call("POST", "/v1/agents/t4-2/heartbeat", {}, token=n1.token)[0] == 403
    assert d.call("POST", "/v1/agents/t4-2/reports", {"reports": []}, token=n1.token)[0] == 403
    assert d.call("GET", "/v1/agents/t4-1/assignments", token=join)[0] == 403
    assert d.call("GET", "/v1/agents/t4-1/assignments", token=d.token)[0] == 403
    assert n2.poll()["up"] is True
    status, out = d.call("POST", "/v1/tokens", {"name": "x", "role": "node", "scope": "t4-1"})
    assert status == 400 and out["error"]["field"] == "role", out
    old = n1.token
    out = n1.register(old)  # a restarted agent: same shape, its credential, a fresh credential back
    assert out["revoked"] and d.call("GET", "/v1/agents/t4-1/assignments", token=old)[0] == 401
    assert n1.heartbeat()[0] == 200
    for bad, field in [({"job": 1, "replica": 0, "gpus": {}}, "running[0].gpus"),
                       ({"job": 1, "replica": 0, "cpu": 3}, "running[0].cpu"), ({"job": 1}, "running[0]")]:
        status, out = n1.call("POST", "heartbeat", {"running": [bad]})
        assert status == 400 and out["error"]["field"] == field, (bad, out)
    status, out = n1.call("POST", "heartbeat", {"running": [{"job": 1, "replica": 0, "gpus": [{"uuid": "GPU-x"}]}]})
    assert status == 200, out
    bigger = dict(n1.inventory, gpu_count=4, gpu_uuids=["u%d" % i for i in range(4)])
    status, out = d.call("POST", "/v1/agents:register", {"node": bigger}, token=join)
    assert status == 409, out
    status, out = d.call("POST", "/v1/agents:register", {"node": dict(n1.inventory, name="h100-a-0")}, token=join)
    assert status == 409 and "fleet" in out["error"]["message"], out


def test_a_long_poll_answers_a_bind_on_its_node_with_the_replicas(d):
    d.ok("PUT", "/v1/tenants/t", {})
    n1, n2 = FakeAgent(d, "t4-1"), FakeAgent(d, "t4-2")
    before = {a.name: a.poll()["version"] for a in (n1, n2)}
    answers = {}

    def wait(agent):
        t0 = time.time()
        answers[agent.name] = (agent.poll(after=before[agent.name], wait=20), time.time() - t0)

    threads = [threading.Thread(target=wait, args=(a,)) for a in (n1, n2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    job_id = submit(d, replicas=2, gpus=2, time_limit_s=3600)
    for t in threads:
        t.join(30)
    peers = None
    for name, (out, took) in answers.items():
        assert took < 5, "the poll of %s took %.1f s" % (name, took)
        assert out["version"] > before[name]
        [a] = mine(out, job_id)
        assert a["action"] == "run" and a["replicas"] == 2 and a["bind_time"] > 0
        assert sorted(a["gpus"]) == ["GPU-%s-0" % name, "GPU-%s-1" % name], a
        assert a["command"] == ["python3", "train.py"] and a["env"] == {"SEED": "7"} and a["tenant"] == "t"
        assert a["time_limit_s"] == 3600 and a["restart_count"] == 0 and a["checkpoint_grace_s"] == 30
        assert a["peers"][a["replica"]] == name
        peers = peers or a["peers"]
        assert a["peers"] == peers
    assert sorted(peers) == ["t4-1", "t4-2"]
    assert "execution" not in job(d, job_id)  # it runs on agent nodes
    t0 = time.time()
    waiting = threading.Thread(target=lambda: poll_until_closed(n1))
    waiting.start()
    time.sleep(0.3)
    d.stop()  # a graceful stop answers the waiting poll instead of hanging on it
    waiting.join(10)
    assert not waiting.is_alive() and time.time() - t0 < 15


def test_each_job_keeps_its_own_spec_fields_poll_after_poll(d):
    """A job's spec fields are read from its row once, then kept with the
    node's last answer (agents.h, gp_agents_specs): every later poll, and a
    job new to the node, carries its own job's fields, and a job that left
    takes its fields with it."""
    d.ok("PUT", "/v1/tenants/t", {})
    n1 = FakeAgent(d, "t4-1")
    first = submit(d, env={"SEED": "1"})
    gpd.wait_for(lambda: mine(n1.poll(), first), what="the first job bound")
    second = submit(d, command=["python3", "eval.py"], env={"SEED": "2"}, stop_signal="SIGUSR1")
    gpd.wait_for(lambda: mine(n1.poll(), second), what="the second job bound")
    for _ in range(3):
        out = n1.poll()
        [a], [b] = mine(out, first), mine(out, second)
        assert a["command"] == ["python3", "train.py"] and a["env"] == {"SEED": "1"}, a
        assert a.get("stop_signal") != "SIGUSR1", a
        assert b["command"] == ["python3", "eval.py"] and b["env"] == {"SEED": "2"}, b
        assert b["stop_signal"] == "SIGUSR1" and b["tenant"] == "t" and b["checkpoint_grace_s"] == 30, b
    [r] = n1.report(exited(a))
    assert r["applied"], r
    out = n1.poll()
    assert not mine(out, first) and mine(out, second)[0]["env"] == {"SEED": "2"}, out


def poll_wakeups(d):
    status, text = d.call("GET", "/metrics")
    assert status == 200, text
    [line] = [x for x in text.splitlines() if x.startswith("gpupool_agent_poll_wakeups_total ")]
    return int(line.split()[1])


def test_a_commit_on_one_node_wakes_only_that_nodes_poll(d):
    d.ok("PUT", "/v1/tenants/t", {})
    big, small = FakeAgent(d, "t4-a", gpus=4), FakeAgent(d, "t4-b", gpus=2)
    version = small.poll()["version"]
    answer = {}
    waiting = threading.Thread(target=lambda: answer.update(out=small.poll(after=version, wait=4)))
    waiting.start()
    time.sleep(0.5)  # small's poll is waiting
    woken = poll_wakeups(d)
    on_big = submit(d, gpus=4)  # fits only t4-a
    gpd.wait_for(lambda: job(d, on_big)["state"] == "running", what="job on t4-a")
    [a] = mine(big.poll(), on_big)
    big.report({"what": "started", "job": on_big, "replica": 0, "bind_time": a["bind_time"], "pid": 7})
    waiting.join(30)
    assert answer["out"]["version"] == version and answer["out"]["assignments"] == [], answer
    assert poll_wakeups(d) == woken, "t4-b's poll was woken by commits on t4-a"
    waiting = threading.Thread(target=lambda: answer.update(out=small.poll(after=version, wait=20)))
    waiting.start()
    time.sleep(0.5)
    on_small = submit(d, gpus=2)  # t4-a is full
    waiting.join(30)
    assert answer["out"]["version"] > version and mine(answer["out"], on_small), answer
    assert poll_wakeups(d) > woken


def test_a_heartbeat_near_max_body_is_taken_whole(d):
    """Bodies stream through libmicrohttpd's per-connection pool (64 KiB):
    one of 0.9 MB (--max-body is 1 MiB) arrives whole (test_bad_input.py
    has the 413 past it)."""
    n1 = FakeAgent(d, "t4-1")
    gpus = [{"index": i % 2, "note": "x" * 150} for i in range(5500)]
    status, out = n1.call("POST", "heartbeat", {"running": [], "gpus": gpus})
    assert status == 200, out
    assert d.ok("GET", "/v1/nodes/t4-1")["agent"]["gpus"] == gpus


def test_replica_reports_finish_the_gang(d):
    d.ok("PUT", "/v1/tenants/t", {})
    n1, n2 = FakeAgent(d, "t4-1"), FakeAgent(d, "t4-2")
    ok_job = submit(d, replicas=2, gpus=2)
    gpd.wait_for(lambda: job(d, ok_job)["state"] == "running", what="gang running")
    a1, a2 = mine(n1.poll(), ok_job)[0], mine(n2.poll(), ok_job)[0]
    started = {"what": "started", "job": ok_job, "replica": a1["replica"], "bind_time": a1["bind_time"], "pid": 4242}
    [r] = n1.report(started)  # a history row "start" (it was only noted before issue 13)
    assert r["applied"] and "note" not in r, r
    [r] = n1.report(started)  # resent: one row
    assert not r["applied"] and r["note"] == "already recorded", r
    [r] = n1.report(dict(started, bind_time=a1["bind_time"] - 1))
    assert not r["applied"] and r["note"] == "not the job's current run", r
    starts = [h["reason"] for h in job(d, ok_job)["history"] if h["kind"] == "start"]
    assert starts == ["replica %d on t4-1: started, pid 4242" % a1["replica"]], starts
    assert "started, pid 4242" in d.cli("job", str(ok_job)).stdout
    [r] = n1.report(exited(a1))
    assert r["applied"] and r["job_state"] == "running", r
    [r] = n1.report(exited(a1))  # resent after a reconnect: counted once
    assert not r["applied"] and job(d, ok_job)["state"] == "running", r
    [r] = n2.report(exited(a2))
    assert r["applied"], r
    view = job(d, ok_job)
    assert view["state"] == "succeeded", view["state"]
    assert sum(1 for h in view["history"] if h["kind"] == "exit") == 2, view["history"]
    [r] = n2.report(exited(a2))
    assert not r["applied"], r

    bad_job = submit(d, replicas=2, gpus=2)
    gpd.wait_for(lambda: job(d, bad_job)["state"] == "running", what="second gang running")
    b1 = mine(n1.poll(), bad_job)[0]
    n1.report(exited(b1, code=3))
    view = job(d, bad_job)
    assert view["state"] == "failed", view["state"]
    assert any("exit code 3" in (h.get("reason") or "") for h in view["history"]), view["history"]
    assert mine(n2.poll(), bad_job) == [], "the other replica is still assigned"
    status, out = n1.call("POST", "reports", {"reports": [{"what": "exited", "job": 1}]})
    assert status == 400 and "replica" in out["error"]["message"], out
    status, out = n1.call("POST", "reports", {"reports": [dict(exited(b1), reason="crashed")]})
    assert status == 400 and out["error"]["field"] == "reports[0].reason", out
    status, out = n1.call("POST", "reports", {"reports": [dict(exited(b1), gpu_memory_mib=9000)]})
    assert status == 400 and out["error"]["field"] == "reports[0]" and "gpu_memory" in out["error"]["message"], out
    status, out = n1.call("POST", "reports", {"reports": [dict(exited(b1), reason="gpu_memory", gpu_memory_mib=-1)]})
    assert status == 400 and out["error"]["field"] == "reports[0].gpu_memory_mib", out


def test_a_pull_in_a_heartbeat_shows_on_the_job_and_bad_ones_are_refused(d):
    """A heartbeat's "pull" (state pulling) is the job's "pull" until the next
    heartbeat drops it; `started` with its timings writes the history row;
    a malformed pull, timing or message is a 400 naming the field."""
    d.ok("PUT", "/v1/tenants/t", {})
    n1 = FakeAgent(d, "t4-5")
    j = submit(d)
    gpd.wait_for(lambda: job(d, j)["state"] == "running", what="running")
    [a] = mine(n1.poll(), j)
    pull = {"image": "docker://r.example/t/big:v1", "done_bytes": 5 << 20, "total_bytes": 40 << 20,
            "started_at": 1795523111}
    entry = {"job": j, "replica": a["replica"], "pid": 0, "state": "pulling", "gpus": [], "pull": pull}
    assert n1.heartbeat([entry])[0] == 200
    view = job(d, j)
    assert view["pull"] == pull and view["placement"][a["replica"]]["pull"] == pull, view
    assert "pulling image docker://r.example/t/big:v1, 5.0 MiB of 40.0 MiB" in d.cli("job", str(j)).stdout
    assert "pulling image" in d.cli("jobs").stdout
    assert n1.heartbeat([{"job": j, "replica": a["replica"], "state": "running"}])[0] == 200
    assert "pull" not in job(d, j)
    for bad, field in [(dict(pull, done_bytes=-1), "running[0].pull.done_bytes"), ({"image": "x"}, "running[0].pull"),
                       (dict(pull, image="a\nb"), "running[0].pull.image"), (dict(pull, eta=3), "running[0].pull.eta"),
                       ([], "running[0].pull")]:
        status, out = n1.call("POST", "heartbeat", {"running": [dict(entry, pull=bad)]})
        assert status == 400 and out["error"]["field"] == field, (bad, out)
    started = {"what": "started", "job": j, "replica": a["replica"], "bind_time": a["bind_time"], "pid": 77,
               "from_bind_ms": 3400, "pull_ms": 2900, "image": pull["image"]}
    for bad, field in [(dict(started, from_bind_ms=-1), "from_bind_ms"), (dict(started, image="a\tb"), "image"),
                       (dict(exited(a), message="two\nlines"), "message")]:
        status, out = n1.call("POST", "reports", {"reports": [bad]})
        assert status == 400 and out["error"]["field"] == "reports[0]." + field, (bad, out)
    n1.report(started)
    starts = [h["reason"] for h in job(d, j)["history"] if h["kind"] == "start"]
    assert starts == ["replica 0 on t4-5: started, pid 77, 3.4 s from bind, of which 2.9 s pulling "
                      "docker://r.example/t/big:v1"], starts


def test_a_preempted_victim_is_told_to_stop_and_its_report_ends_the_grace(d):
    n1 = FakeAgent(d, "t4-1")
    d.ok("PUT", "/v1/tenants/owner", {"guarantee": {"gpu": {"T4": 2}}})
    d.ok("PUT", "/v1/tenants/borrower", {})
    victim = submit(d, tenant="borrower", gpus=2, grace=600)
    gpd.wait_for(lambda: job(d, victim)["state"] == "running", what="borrower running")
    version = n1.poll()["version"]
    t0 = time.time()
    owner = submit(d, tenant="owner", gpus=2, grace=0)
    out = n1.poll(after=version, wait=20)
    [a] = mine(out, victim)
    assert a["action"] == "stop" and a["stop_reason"] == "preempt", a
    assert t0 + 590 <= a["kill_deadline"] <= time.time() + 605, a
    # to the millisecond: the grace (600 s) from the decision, which came
    # between the submit and the poll's answer; the whole-second deadline
    # is up to a second later
    assert int(t0 * 1000) + 600000 <= a["kill_deadline_ms"] <= time.time() * 1000 + 600000, (t0, a)
    assert a["kill_deadline_ms"] <= a["kill_deadline"] * 1000, a
    [r] = n1.report({"what": "checkpointed", "job": victim, "replica": 0, "time": int(time.time())})
    assert r["applied"], r
    [a] = mine(n1.poll(), victim)
    assert a["kill_deadline"] <= time.time() + 1 and a["last_checkpoint"], a  # checkpoint done: stop now
    assert a["kill_deadline_ms"] <= time.time() * 1000, a
    [r] = n1.report({"what": "checkpointed", "job": victim, "replica": 0, "time": int(time.time()) - 5})
    assert not r["applied"], r
    [r] = n1.report(exited(a, signal=15, reason="signalled"))
    assert r["applied"] and r["job_state"] == "pending", r
    gpd.wait_for(lambda: job(d, owner)["state"] == "running", timeout=10, what="reclaimer bound")
    assert time.time() - t0 < 60, "the grace was not ended early"
    view = job(d, victim)
    assert view["state"] == "pending" and view["preemptions"] == 1, view
    [a] = mine(n1.poll(), owner)
    assert a["action"] == "run"


def test_the_exit_that_ends_a_grace_binds_the_reclaimer_in_its_batch(d):
    # --pass-min-ms 3000: a pass after a change waits up to 3 s, except the
    # one an exit ending a grace asks for: it runs in the exit's batch, so
    # the reclaimer is bound once the report is answered
    d.stop()
    d.extra = ["--pass-min-ms", "3000"]
    d.start()
    n1 = FakeAgent(d, "t4-1")
    d.ok("PUT", "/v1/tenants/owner", {"guarantee": {"gpu": {"T4": 2}}})
    d.ok("PUT", "/v1/tenants/borrower", {})
    victim = submit(d, tenant="borrower", gpus=2, grace=600)
    gpd.wait_for(lambda: job(d, victim)["state"] == "running", what="borrower running")
    owner = submit(d, tenant="owner", gpus=2, grace=0)
    gpd.wait_for(lambda: job(d, victim)["state"] == "preempting", what="borrower preempted")
    [a] = mine(n1.poll(), victim)
    [r] = n1.report(exited(a, signal=9, reason="signalled"))
    assert r["applied"] and r["job_state"] == "pending", r
    assert job(d, owner)["state"] == "running", job(d, owner)


def test_a_failed_gpu_requeues_its_job_whose_next_run_counts_a_restart(d):
    d.ok("PUT", "/v1/tenants/t", {})
    join = join_token(d)
    n1, n2 = FakeAgent(d, "t4-1", join=join), FakeAgent(d, "t4-2", join=join)
    job_id = submit(d, gpus=1)
    gpd.wait_for(lambda: job(d, job_id)["state"] == "running", what="job running")
    first = job(d, job_id)["placement"][0]
    sick = n1 if first["node"] == "t4-1" else n2
    [a] = mine(sick.poll(), job_id)
    assert a["restart_count"] == 0, a
    index = int(first["gpus"][0].rsplit("-", 1)[1])  # the fake agent's UUIDs: GPU-NODE-INDEX
    [r] = sick.report({"what": "gpu_health", "gpu": index, "healthy": False})
    assert r["applied"], r
    view = gpd.wait_for(lambda: (lambda v: v if v["state"] == "running" else None)(job(d, job_id)),
                        what="job requeued and bound again")
    [a] = mine((n1 if view["placement"][0]["node"] == "t4-1" else n2).poll(), job_id)
    assert a["restart_count"] == 1, a
    assert view["requeues"] == 1 and view["preemptions"] == 0, view


def test_a_silent_node_is_lost_and_must_register_again(d):
    d.stop()
    d.extra = ["--node-lost-after", "2"]
    d.start()
    d.ok("PUT", "/v1/tenants/t", {})
    join = join_token(d)
    n1, n2 = FakeAgent(d, "t4-1", join=join), FakeAgent(d, "t4-2", join=join)
    job_id = submit(d, gpus=2)
    gpd.wait_for(lambda: job(d, job_id)["state"] == "running", what="job running")
    first = job(d, job_id)["placement"][0]["node"]
    silent, alive = (n1, n2) if first == "t4-1" else (n2, n1)

    def lost():
        alive.heartbeat()
        return not d.ok("GET", "/v1/nodes/" + silent.name)["up"]

    gpd.wait_for(lost, timeout=15, what="the silent node lost")
    assert d.ok("GET", "/v1/nodes/" + alive.name)["up"]
    view = gpd.wait_for(lambda: (lambda v: v if v["state"] == "running" else None)(job(d, job_id)),
                        what="job requeued and bound again")
    assert view["placement"][0]["node"] == alive.name, view["placement"]
    assert any("lost" in (h.get("reason") or "") for h in view["history"]), view["history"]
    [a] = mine(alive.poll(), job_id)
    assert a["restart_count"] == 1 and view["requeues"] == 1, (a, view)  # GPUPOOL_RESTART_COUNT: its second run
    status, out = silent.heartbeat()
    assert status == 409 and "register again" in out["error"]["message"], out
    assert mine(silent.poll(), job_id) == []
    status, out = d.call("POST", "/v1/agents:register", {"node": silent.inventory}, token=join)
    assert status == 409 and "gpupool nodes approve" in out["error"]["message"], out  # a join token alone: no
    silent.register(silent.token)  # its own credential
    assert silent.heartbeat()[0] == 200 and d.ok("GET", "/v1/nodes/" + silent.name)["up"]


def test_kill9_keeps_assignments_raises_the_epoch_and_replays(d):
    d.ok("PUT", "/v1/tenants/t", {})
    n1, n2 = FakeAgent(d, "t4-1"), FakeAgent(d, "t4-2")
    done = submit(d, gpus=2)
    gpd.wait_for(lambda: job(d, done)["state"] == "running", what="first job")
    holder = n1 if mine(n1.poll(), done) else n2
    holder.report(exited(mine(holder.poll(), done)[0]))
    assert job(d, done)["state"] == "succeeded"
    running = submit(d, replicas=2, gpus=1)
    gpd.wait_for(lambda: job(d, running)["state"] == "running", what="gang running")
    before = {a.name: a.poll() for a in (n1, n2)}
    n1.heartbeat()
    d.ok("GET", "/v1/nodes/t4-1")  # the heartbeat's telemetry is shown
    assert d.ok("GET", "/v1/nodes/t4-1")["agent"]["gpus"] == [{"index": 0, "sm_util": 0.5}]
    d.kill9()
    d.start()
    for a in (n1, n2):
        after = a.poll()  # the same credential works after the restart
        assert after["epoch"] == before[a.name]["epoch"] + 1 and after["version"] > before[a.name]["version"]
        assert after["assignments"] == before[a.name]["assignments"], (after, before[a.name])
        assert after["up"]
    used = [g for a in (n1, n2) for x in a.poll()["assignments"] for g in x["gpus"]]
    assert len(used) == len(set(used)) == 2, used
    assert d.ok("GET", "/v1/nodes/t4-1")["up"]  # last seen starts at the restart
    d.stop()
    p = subprocess.run([os.path.join(gpd.BIN, "gpupool-replay"), os.path.join(d.dir, "gpupool.db")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "all equal" in p.stdout, p.stdout + p.stderr
    d.start()


if __name__ == "__main__":
    gpd.run([test_join_token_registers_and_credentials_reach_only_their_node,
             test_a_long_poll_answers_a_bind_on_its_node_with_the_replicas,
             test_each_job_keeps_its_own_spec_fields_poll_after_poll,
             test_a_commit_on_one_node_wakes_only_that_nodes_poll,
             test_a_heartbeat_near_max_body_is_taken_whole,
             test_replica_reports_finish_the_gang,
             test_a_pull_in_a_heartbeat_shows_on_the_job_and_bad_ones_are_refused,
             test_a_preempted_victim_is_told_to_stop_and_its_report_ends_the_grace,
             test_the_exit_that_ends_a_grace_binds_the_reclaimer_in_its_batch,
             test_a_failed_gpu_requeues_its_job_whose_next_run_counts_a_restart,
             test_a_silent_node_is_lost_and_must_register_again,
             test_kill9_keeps_assignments_raises_the_epoch_and_replays])
