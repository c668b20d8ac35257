#!/usr/bin/env python3
"""Accounting (issue 32 item 7): what a finished job keeps, job listings by time, user and state
(sacct), usage by user with org roll-ups and totals (sreport), and bad options named.

Each test starts a real gpupoold (examples/fleet.yaml) with a fresh SQLite
store and applies examples/tenants.yaml.  Jobs end by a cancel with
checkpoint_grace_s 0: the node has no agent, so the job ends when its
(empty) grace does.
"""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402


def finished_job(d, name="done", user=None):
    """A job that ran on a node and was cancelled: its view once final."""
    body = {"tenant": "research/nlp", "name": name, "gpus": 8, "gpu_types": ["H100"], "checkpoint_grace_s": 0}
    if user:
        body["user"] = user
    job = d.ok("POST", "/v1/jobs", body)
    assert job["state"] == "running", job
    d.ok("DELETE", "/v1/jobs/%d" % job["id"], expect=(202,))
    return gpd.wait_for(lambda: (lambda v: v if v["state"] == "cancelled" else None)(
        d.ok("GET", "/v1/jobs/%d" % job["id"])), timeout=10, what="the cancel to end the job")


def test_finished_job_keeps_class_placement_and_times(d):
    d.cli("apply", "-f", gpd.TENANTS)
    done = finished_job(d)
    # the engine forgets the placement and class when the job ends; the row keeps them
    assert done["class"] == "guaranteed", done
    assert done["placement"] and done["placement"][0]["node"].startswith("h100"), done
    assert isinstance(done["bind_time"], int) and done["end_time"] >= done["bind_time"], done
    listed = [j for j in d.ok("GET", "/v1/jobs?state=cancelled")["jobs"] if j["id"] == done["id"]]
    assert listed and listed[0]["placement"] == done["placement"], listed
    # the table shows them, not "-"
    row = [line for line in d.cli("jobs", "--all").stdout.splitlines() if line.split()[:1] == [str(done["id"])]]
    assert row, d.cli("jobs", "--all").stdout
    assert "guaranteed" in row[0] and done["placement"][0]["node"] in row[0], row
    # and a restart does not lose them (they are in the store, not the engine)
    d.stop()
    d.start()
    again = d.ok("GET", "/v1/jobs/%d" % done["id"])
    for key in ("class", "placement", "bind_time", "end_time"):
        assert again[key] == done[key], (key, again, done)


def ids(out):
    return {int(line.split()[0]) for line in out.splitlines()[1:] if line.split() and line.split()[0].isdigit()}


def test_jobs_lists_live_by_default_and_filters_like_sacct(d):
    d.cli("apply", "-f", gpd.TENANTS)
    done = finished_job(d, name="old", user="alice")
    live = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "name": "live", "gpus": 8, "gpu_types": ["H100"],
                                     "user": "bob"})
    # live jobs only by default; --all, a --state or a time window shows finished ones
    assert ids(d.cli("jobs").stdout) == {live["id"]}, d.cli("jobs").stdout
    assert ids(d.cli("jobs", "--all").stdout) == {done["id"], live["id"]}
    assert ids(d.cli("jobs", "--state", "cancelled").stdout) == {done["id"]}
    assert ids(d.cli("jobs", "--user", "alice", "--all").stdout) == {done["id"]}
    # a window: alive some time in [from, to) (ages, ISO 8601 and epoch seconds all read)
    assert ids(d.cli("jobs", "--from", "-1h").stdout) == {done["id"], live["id"]}
    assert ids(d.cli("jobs", "--from", "+1h").stdout) == {live["id"]}  # the finished one ended before
    assert ids(d.cli("jobs", "--to", "2020-01-01T00:00:00Z").stdout) == set()
    assert ids(d.cli("jobs", "--from", str(done["end_time"] + 1)).stdout) == {live["id"]}
    # the API takes the same window in epoch seconds; a bad one is a 400 naming it
    got = d.ok("GET", "/v1/jobs?from=%d&to=%d" % (done["submit_time"], done["end_time"] + 1))["jobs"]
    assert {j["id"] for j in got} >= {done["id"]}, got
    for q, field in (("from=yesterday", "from"), ("to=0", "to"), ("from=100&to=50", "to")):
        st, err = d.call("GET", "/v1/jobs?" + q)
        assert st == 400 and err["error"]["field"] == field, (q, st, err)
    # CSV: ISO 8601 UTC times and elapsed seconds, the finished job's node and class kept
    rows = list(csv.DictReader(io.StringIO(d.cli("jobs", "--all", "-o", "csv").stdout)))
    old = [r for r in rows if r["id"] == str(done["id"])][0]
    assert old["state"] == "cancelled" and old["class"] == "guaranteed" and old["user"] == "alice", old
    assert old["end"].endswith("Z") and "T" in old["start"] and int(old["elapsed_s"]) >= 0, old
    assert old["nodes"] == done["placement"][0]["node"], old
    # JSON: the server's answer, live only unless asked
    listed = json.loads(d.cli("jobs", "-o", "json").stdout)["jobs"]
    assert [j["id"] for j in listed] == [live["id"]], listed
    # a bad -o or option says which, with the usage
    bad = d.cli("jobs", "-o", "xml", check=False)
    assert bad.returncode == 2 and "-o takes table, csv or json" in bad.stderr, bad.stderr
    bad = d.cli("jobs", "--from", "someday", check=False)
    assert bad.returncode == 2 and "--from" in bad.stderr, bad.stderr


def test_usage_by_user_with_org_rollups_and_totals(d):
    d.cli("apply", "-f", gpd.TENANTS)
    for tenant, user in (("research/nlp", "alice"), ("research/nlp", "bob"), ("research/vision", "carol")):
        d.ok("POST", "/v1/jobs", {"tenant": tenant, "gpus": 1, "gpu_types": ["H100"], "user": user})
    gpd.wait_for(lambda: len(d.ok("GET", "/v1/usage?by=user")["usage"]) == 3 and all(
        u["gpu_seconds"] > 0 for u in d.ok("GET", "/v1/usage?by=user")["usage"]), timeout=10, what="usage")
    rows = list(csv.DictReader(io.StringIO(d.cli("usage", "--by", "user", "-o", "csv").stdout)))
    usage = {(r["tenant"], r["user"]): float(r["gpu_hours"]) for r in rows if r["kind"] == "usage"}
    assert set(usage) == {("research/nlp", "alice"), ("research/nlp", "bob"), ("research/vision", "carol")}, rows
    sub = {r["tenant"]: float(r["gpu_hours"]) for r in rows if r["kind"] == "subtree"}
    assert set(sub) == {"research", "research/nlp", "research/vision"}, rows
    # the org rolls up its children; the total is every line (3 decimals each, so within rounding)
    assert abs(sub["research"] - sub["research/nlp"] - sub["research/vision"]) < 0.002, sub
    total = [float(r["gpu_hours"]) for r in rows if r["kind"] == "total"]
    assert len(total) == 1 and abs(total[0] - sum(usage.values())) < 0.004, rows
    assert all(r["from"].endswith("Z") and "T" in r["to"] for r in rows), rows
    # the human table has the user, the roll-up and the total; -o json is the API's answer
    table = d.cli("usage", "--by", "user").stdout
    assert "USER" in table.splitlines()[0] and "SUBTREE" in table and "TOTAL" in table, table
    answer = json.loads(d.cli("usage", "-o", "json").stdout)
    assert answer["total_gpu_seconds"] > 0 and "user" not in answer["usage"][0], answer
    # a member sees its own tenant's users and jobs only, whatever the window or grouping
    tok = d.ok("POST", "/v1/tokens", {"name": "carol", "role": "member", "scope": "research/vision",
                                      "user": "carol"})["token"]
    mine = d.ok("GET", "/v1/usage?by=user", token=tok)
    assert {(u["tenant"], u["user"]) for u in mine["usage"]} == {("research/vision", "carol")}, mine
    assert {t["tenant"] for t in mine["subtrees"]} == {"research", "research/vision"}, mine
    assert abs(mine["total_gpu_seconds"] - mine["usage"][0]["gpu_seconds"]) < 1e-6, mine
    listed = d.ok("GET", "/v1/jobs?from=1&to=%d" % (2 ** 40), token=tok)["jobs"]
    assert listed and {j["tenant"] for j in listed} == {"research/vision"}, listed
    # bad values name themselves
    st, err = d.call("GET", "/v1/usage?by=team")
    assert st == 400 and err["error"]["field"] == "by", (st, err)
    bad = d.cli("usage", "--by", "team", check=False)
    assert bad.returncode == 2 and "--by takes tenant or user" in bad.stderr, bad.stderr


def test_a_failed_job_keeps_its_exit_code_in_lists(d):
    """A real agent (sim backend) runs a job that exits 3: the listing says so, as sacct's ExitCode."""
    d.cli("apply", "-f", gpd.TENANTS)
    node_file = agentproc.write_node_file(d.dir, agentproc.sim_nodes("t4", 1, gpu_type="T4", block="blk-t"))
    agent = agentproc.Agent(d, node_file, nodes=["t4-0"]).start()
    try:
        agent.wait_up(["t4-0"])
        job = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["T4"],
                                        "command": ["sh", "-c", "exit 3"]})
        done = agentproc.wait_state(d, job["id"], ("failed", "succeeded"))
        assert done["state"] == "failed" and "exit code 3" in done["last_exit"], done
        listed = [j for j in d.ok("GET", "/v1/jobs?state=failed")["jobs"] if j["id"] == job["id"]]
        assert listed and listed[0]["last_exit"] == done["last_exit"], listed
        assert listed[0]["placement"][0]["node"] == "t4-0" and listed[0]["bind_time"] is not None, listed
        row = [r for r in csv.DictReader(io.StringIO(d.cli("jobs", "--all", "-o", "csv").stdout))
               if r["id"] == str(job["id"])][0]
        assert "exit code 3" in row["last_exit"] and row["nodes"] == "t4-0" and row["end"], row
        assert "exit code 3" in d.cli("jobs", "--state", "failed").stdout
    finally:
        agent.stop()


def test_bad_short_option_names_itself_and_shows_usage(d):
    for cmd in (["usage", "-x"], ["jobs", "-x"], ["nodes", "-q"], ["bill", "-p"]):
        bad = d.cli(*cmd, check=False)
        assert bad.returncode == 2, bad
        assert "gpupool %s: unknown option -%s" % (cmd[0], cmd[1][1]) in bad.stderr, bad.stderr
        assert "usage: gpupool " + cmd[0] in bad.stderr and "invalid option" not in bad.stderr, bad.stderr
    # a last flag without its value, too (getopt said "option '--from' requires an argument")
    for cmd in (["usage", "--from"], ["jobs", "--tenant"], ["bill", "-o"]):
        bad = d.cli(*cmd, check=False)
        assert bad.returncode == 2 and "gpupool %s: %s needs a value" % tuple(cmd) in bad.stderr, bad.stderr
        assert "usage: gpupool " + cmd[0] in bad.stderr and "requires an argument" not in bad.stderr, bad.stderr
    # a negative age is a value, not an option
    assert d.cli("jobs", "--from", "-24h").returncode == 0


if __name__ == "__main__":
    gpd.run([test_finished_job_keeps_class_placement_and_times, test_jobs_lists_live_by_default_and_filters_like_sacct,
             test_usage_by_user_with_org_rollups_and_totals, test_a_failed_job_keeps_its_exit_code_in_lists,
             test_bad_short_option_names_itself_and_shows_usage])
