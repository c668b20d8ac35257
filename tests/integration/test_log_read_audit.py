#!/usr/bin/env python3
"""Reading another user's job logs through the API is audited (issue 33,
section 5): who read what, when.

Behaviours under test:
  - alice reads her own job's log: no audit row;
  - bob (a member of the same tenant, who may see the job) reads it: the
    answer comes with an audit row "job.logs.read" already committed,
    naming bob's token, the job, replica, run and alice as its user, and
    when; reading on (the next bytes, a follow) within ten minutes adds
    no second row; the admin's read adds its own; the chain verifies;
  - a reader outside the tenant gets 404 and leaves no read row.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from test_agent_api import FakeAgent, job, join_token, mine  # noqa: E402
from test_job_logs import entry, read, ship  # noqa: E402


def member(d, name, user, scope="t"):
    return d.ok("POST", "/v1/tokens", {"name": name, "role": "member", "scope": scope, "user": user})


def log_reads(d):
    return [r for r in d.ok("GET", "/v1/audit?limit=1000")["audit"] if r["action"] == "job.logs.read"]


def test_reading_another_users_log_is_audited_once_per_reader(d):
    d.ok("PUT", "/v1/tenants/t", {})
    d.ok("PUT", "/v1/tenants/other", {})
    alice, bob, eve = member(d, "alice", "alice"), member(d, "bob", "bob"), member(d, "eve", "eve", "other")
    node = FakeAgent(d, "t4-1", join=join_token(d))
    job_id = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "gpu_types": ["T4"], "command": ["train"]},
                  token=alice["token"])["id"]
    gpd.wait_for(lambda: job(d, job_id)["state"] == "running", what="alice's job running")
    [a] = mine(node.poll(), job_id)
    ship(node, entry(a, 0, "loss 0.3\n"))
    assert read(d, job_id, token=alice["token"])[1] == "loss 0.3\n"
    assert log_reads(d) == []  # her own
    assert d.call("GET", "/v1/jobs/%d/logs" % job_id, token=eve["token"])[0] == 404
    assert log_reads(d) == []  # nothing read
    assert read(d, job_id, token=bob["token"])[1] == "loss 0.3\n"
    [row] = log_reads(d)  # committed before the answer: no wait
    assert row["actor"] == bob["id"] and row["role"] == "member" and row["result"] == "ok", row
    target = "job/%d/logs replica=%d run=%d user=alice" % (job_id, a["replica"], a["bind_time"])
    assert row["target"] == target and row["time"] > 0, row
    ship(node, entry(a, 9, "loss 0.2\n"))
    assert read(d, job_id, "?offset=9", token=bob["token"])[1] == "loss 0.2\n"
    assert len(log_reads(d)) == 1  # reading on within ten minutes: the same row
    read(d, job_id)  # the admin's token runs as nobody: not the job's user
    rows = log_reads(d)
    admin = d.ok("GET", "/v1/whoami")["id"]
    assert sorted(r["actor"] for r in rows) == sorted([bob["id"], admin]), rows
    assert d.ok("GET", "/v1/audit/verify")["ok"]


if __name__ == "__main__":
    gpd.run([test_reading_another_users_log_is_audited_once_per_reader])
