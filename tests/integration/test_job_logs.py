#!/usr/bin/env python3
"""Replica logs: shipped by a node agent, read back through gpupoold.

A fake agent (test_agent_api.FakeAgent) posts its replicas' bytes to POST
/v1/agents/{node}/logs as gpupool-agent does; GET /v1/jobs/{id}/logs and
`gpupool logs` read them.

Behaviours under test:
  - an agent's bytes come back exactly, a resent (overlapping) chunk counts
    once, and the last bytes of a replica whose job already ended are
    still taken (its run was placed on that node);
  - `gpupool logs ID --replica N` prints them; `--follow` long-polls, prints
    bytes as they arrive and exits once the run's eof arrived; a GET with
    wait answers when bytes arrive;
  - refused, with nothing written: bad base64, an offset past the end (409
    naming logs[0].offset), another node's replica (404), another node's
    path (403), unknown fields; a member of another tenant cannot read them;
  - `gpupool checkpoint` creates $GPUPOOL_CHECKPOINT_DIR/.done, and outside
    a job says it is not inside one.
"""
import base64
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_agent_api import FakeAgent, exited, job, join_token, mine, submit  # noqa: E402


def b64(text):
    return base64.b64encode(text.encode()).decode()


def entry(a, offset, text, eof=False):
    return {"job": a["job"], "replica": a["replica"], "bind_time": a["bind_time"], "offset": offset,
            "data": b64(text), "eof": eof}


def ship(agent, *entries, expect=200):
    status, out = agent.call("POST", "logs", {"logs": list(entries)})
    assert status == expect, (status, out)
    return out


def read(d, job_id, query="", token=None):
    status, out = d.call("GET", "/v1/jobs/%d/logs%s" % (job_id, query), token=token)
    assert status == 200, (status, out)
    return out, base64.b64decode(out["data"]).decode()


def running_gang(d):
    d.ok("PUT", "/v1/tenants/t", {})
    join = join_token(d)
    n1, n2 = FakeAgent(d, "t4-1", join=join), FakeAgent(d, "t4-2", join=join)
    job_id = submit(d, replicas=2, gpus=2)
    gpd.wait_for(lambda: job(d, job_id)["state"] == "running", what="gang running")
    reps = {a.name: mine(a.poll(), job_id)[0] for a in (n1, n2)}
    return n1, n2, job_id, reps


def test_an_agent_ships_logs_and_gpupool_logs_prints_them(d):
    n1, n2, job_id, reps = running_gang(d)
    a1, a2 = reps["t4-1"], reps["t4-2"]
    assert ship(n1, entry(a1, 0, "hello\n"))["results"] == [{"size": 6}]
    assert ship(n1, entry(a1, 0, "hello\nworld\n"))["results"] == [{"size": 12}]  # a resend counts once
    out, text = read(d, job_id, "?replica=%d" % a1["replica"])
    assert text == "hello\nworld\n" and out["run"] == a1["bind_time"] and out["runs"] == [a1["bind_time"]], out
    assert out["next"] == out["size"] == 12 and out["eof"] is False and out["job_state"] == "running", out
    out, text = read(d, job_id, "?replica=%d&offset=6" % a1["replica"])
    assert text == "world\n" and out["offset"] == 6, out
    p = d.cli("logs", str(job_id), "--replica", str(a1["replica"]))
    assert p.stdout == "hello\nworld\n", p.stdout
    n1.report(exited(a1))
    n2.report(exited(a2))
    gpd.wait_for(lambda: job(d, job_id)["state"] == "succeeded", what="gang succeeded")
    # the last bytes arrive after the job ended: still the run of t4-2's replica
    assert ship(n2, entry(a2, 0, "rank 1 done\n", eof=True))["results"] == [{"size": 12}]
    p = d.cli("logs", str(job_id), "--replica", str(a2["replica"]), "--follow")
    assert p.stdout == "rank 1 done\n", p.stdout
    out, _ = read(d, job_id, "?replica=%d&run=%d" % (a2["replica"], a2["bind_time"]))
    assert out["eof"] is True and out["job_state"] == "succeeded", out


def test_follow_prints_bytes_as_they_arrive_until_eof(d):
    n1, n2, job_id, reps = running_gang(d)
    a1 = reps["t4-1"]
    ship(n1, entry(a1, 0, "step 1\n"))
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, HOME=d.dir)
    follow = subprocess.Popen([os.path.join(gpd.BIN, "gpupool"), "logs", str(job_id), "--replica",
                               str(a1["replica"]), "--follow"], env=env, stdout=subprocess.PIPE, text=True)
    assert follow.stdout.readline() == "step 1\n"
    answers = {}
    waiter = threading.Thread(target=lambda: answers.update(
        read=read(d, job_id, "?replica=%d&offset=7&wait=30" % a1["replica"])))
    waiter.start()
    time.sleep(0.3)
    ship(n1, entry(a1, 7, "step 2\n"))
    waiter.join(timeout=20)
    assert answers["read"][1] == "step 2\n", answers  # the wait answered with the new bytes
    assert follow.stdout.readline() == "step 2\n"
    assert follow.poll() is None  # still following: no eof yet
    ship(n1, entry(a1, 14, "bye\n", eof=True))
    assert follow.stdout.readline() == "bye\n"
    assert follow.wait(timeout=20) == 0


def test_bad_log_posts_are_refused_and_change_nothing(d):
    n1, n2, job_id, reps = running_gang(d)
    a1, a2 = reps["t4-1"], reps["t4-2"]
    ship(n1, entry(a1, 0, "abc"))
    bad = [(dict(entry(a1, 3, "x"), data="not base64!"), 400, "logs[0].data"),
           (entry(a1, 10, "x"), 409, "logs[0].offset"),
           (entry(a2, 0, "x"), 404, "logs[0].job"),
           (dict(entry(a1, 3, "x"), colour="red"), 400, "logs[0].colour"),
           ({"job": job_id, "replica": 0, "offset": 0, "data": ""}, 400, "logs[0]")]
    for body, status, field in bad:
        out = ship(n1, entry(a1, 3, "ok"), body, expect=status)  # the good first entry is not written either
        assert out["error"]["field"].replace("logs[1]", "logs[0]") == field, (field, out)
    assert "past the 3 bytes" in ship(n1, entry(a1, 10, "x"), expect=409)["error"]["message"]
    status, out = d.call("POST", "/v1/agents/t4-2/logs", {"logs": [entry(a2, 0, "x")]}, token=n1.token)
    assert status == 403, out
    assert n1.call("POST", "logs", {"logs": "x"})[0] == 400
    out, text = read(d, job_id, "?replica=%d" % a1["replica"])
    assert text == "abc" and out["size"] == 3, out
    out, text = read(d, job_id, "?replica=%d" % a2["replica"])
    assert text == "" and out["size"] == 0, out
    assert d.call("GET", "/v1/jobs/%d/logs?offset=99" % job_id)[0] == 409
    assert d.call("GET", "/v1/jobs/%d/logs?run=5" % job_id)[0] == 404
    assert d.call("GET", "/v1/jobs/%d/logs?colour=red" % job_id)[0] == 400
    d.ok("PUT", "/v1/tenants/other", {})
    member = d.cli("token", "create", "--name", "m", "--role", "member", "--scope", "other", "--user", "bob",
                   json_out=True)["token"]
    assert d.call("GET", "/v1/jobs/%d/logs" % job_id, token=member)[0] == 404


def test_gpupool_checkpoint_marks_the_checkpoint_done(d):
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, HOME=d.dir)
    env.pop("GPUPOOL_CHECKPOINT_DIR", None)
    p = subprocess.run([os.path.join(gpd.BIN, "gpupool"), "checkpoint"], env=env, capture_output=True, text=True)
    assert p.returncode == 1 and "not inside a gpupool job (GPUPOOL_CHECKPOINT_DIR is not set)" in p.stderr, p
    ckpt = os.path.join(d.dir, "ckpt")
    os.mkdir(ckpt)
    env["GPUPOOL_CHECKPOINT_DIR"] = ckpt
    p = subprocess.run([os.path.join(gpd.BIN, "gpupool"), "checkpoint"], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p
    assert os.listdir(ckpt) == [".done"], os.listdir(ckpt)


if __name__ == "__main__":
    gpd.run([test_an_agent_ships_logs_and_gpupool_logs_prints_them,
             test_follow_prints_bytes_as_they_arrive_until_eof,
             test_bad_log_posts_are_refused_and_change_nothing,
             test_gpupool_checkpoint_marks_the_checkpoint_done])
