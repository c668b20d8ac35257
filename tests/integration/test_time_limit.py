#!/usr/bin/env python3
"""Time limits over the API: tenant defaults per kind, job limits, the stop, restarts.

Each test starts a real gpupoold (examples/fleet.yaml) with a fresh SQLite
store and applies examples/tenants.yaml, where research/nlp sets
time_limit {training: 259200, interactive: 28800}.
"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

NLP = {"guarantee": {"gpu": {"H100": 16}}}


def apply_tenants(d):
    d.cli("apply", "-f", gpd.TENANTS)


def test_tenant_defaults_inherit_and_show(d):
    apply_tenants(d)
    nlp = d.ok("GET", "/v1/tenants/research/nlp")
    assert nlp["time_limit"] == {"training": 259200, "inference": None, "interactive": 28800}, nlp
    none = {"training": None, "inference": None, "interactive": None}
    assert d.ok("GET", "/v1/tenants/research/vision")["time_limit"] == none
    # research's defaults reach vision (none of its own) but not nlp's own kinds
    d.ok("PUT", "/v1/tenants/research", {"guarantee": {"gpu": {"H100": 24}},
                                         "time_limit": {"training": 3600, "inference": 600}})
    vision = d.ok("GET", "/v1/tenants/research/vision")
    assert vision["time_limit"] == {"training": 3600, "inference": 600, "interactive": None}, vision
    nlp = d.ok("GET", "/v1/tenants/research/nlp")
    assert nlp["time_limit"] == {"training": 259200, "inference": 600, "interactive": 28800}, nlp
    # the example again keeps research's limits (an apply keeps what it does not name, issue 32) ...
    out = json.loads(d.cli("--json", "apply", "-f", gpd.TENANTS).stdout)
    assert out["updated"] == [] and "research/nlp" in out["unchanged"], out
    assert d.ok("GET", "/v1/tenants/research/vision")["time_limit"]["training"] == 3600
    # ... and null clears them: research changes back, nlp is unchanged
    path = os.path.join(d.dir, "reset.yaml")
    with open(path, "w") as f:
        f.write("tenants:\n  - path: research\n    time_limit: null\n  - path: research/nlp\n")
    out = json.loads(d.cli("--json", "apply", "-f", path).stdout)
    assert out["updated"] == ["research"] and "research/nlp" in out["unchanged"], out
    assert d.ok("GET", "/v1/tenants/research/vision")["time_limit"] == none


def test_bad_time_limits_name_the_field(d):
    apply_tenants(d)
    before = d.ok("GET", "/v1/tenants/research/nlp")
    for body, field in ((dict(NLP, time_limit={"batch": 60}), "time_limit.batch"),
                        (dict(NLP, time_limit={"training": -1}), "time_limit.training"),
                        (dict(NLP, time_limit={"training": "1h"}), "time_limit.training"),
                        (dict(NLP, time_limit=3600), "time_limit")):
        st, err = d.call("PUT", "/v1/tenants/research/nlp", body)
        assert st == 400 and err["error"]["field"] == field, (body, st, err)
    assert d.ok("GET", "/v1/tenants/research/nlp") == before
    st, err = d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "time_limit_s": 259201})
    assert st == 400 and err["error"]["field"] == "time_limit_s", (st, err)
    assert "259200" in err["error"]["message"], err
    st, err = d.call("POST", "/v1/jobs", {"tenant": "research/nlp", "time_limit_s": -5})
    assert st == 400 and err["error"]["field"] == "time_limit_s", (st, err)


def test_job_past_its_limit_is_stopped_and_fails(d):
    apply_tenants(d)
    d.ok("PUT", "/v1/tenants/research/nlp", dict(NLP, time_limit={"training": 2}))
    job = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "checkpoint_grace_s": 1})
    assert job["state"] == "running" and job["time_limit_s"] == 0, job
    assert job["effective_time_limit_s"] == 2, job
    done = gpd.wait_for(lambda: (lambda j: j if j["state"] == "failed" else None)(
        d.ok("GET", "/v1/jobs/%d" % job["id"])), timeout=15, what="the job to fail")
    assert done["reason"].startswith("time_limit: ran past its limit of 2s"), done
    stops = [h for h in done["history"] if h["kind"] == "stop"]
    assert stops and stops[0]["reason"].startswith("time_limit"), done["history"]
    # an inference job there has no limit
    inf = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "kind": "inference", "gpus": 1})
    assert inf["effective_time_limit_s"] is None, inf


def test_limits_survive_a_restart_and_old_jobs_load(d):
    apply_tenants(d)
    mine = d.cli("submit", "--tenant", "research/vision", "--gpus", "1", "--time-limit", "7200", json_out=True)
    old = d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1})
    d.stop()
    # a store written before time limits: its submit event has no time_limit_s
    con = sqlite3.connect(os.path.join(d.dir, "gpupool.db"))
    rows = con.execute("SELECT seq, payload FROM events WHERE kind = 'submit'").fetchall()
    for seq, payload in rows:
        p = json.loads(payload)
        if p["id"] == old["id"]:
            del p["time_limit_s"]
            con.execute("UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(p), seq))
    con.commit()
    con.close()
    d.start()
    again = d.ok("GET", "/v1/jobs/%d" % mine["id"])
    assert again["time_limit_s"] == 7200 and again["effective_time_limit_s"] == 7200, again
    assert d.ok("GET", "/v1/jobs/%d" % old["id"])["state"] == "running"
    assert d.ok("GET", "/v1/tenants/research/nlp")["time_limit"]["training"] == 259200


def test_durations_with_units_everywhere(d):
    """--time-limit/--grace/--runtime and files take 2h, 90m, 1d, 2:00:00, 2-00:00:00 (issue 32, item 10)."""
    apply_tenants(d)
    for text, seconds in (("2h", 7200), ("90m", 5400), ("1d", 86400), ("2:00:00", 7200), ("2-00:00:00", 172800),
                          ("3600", 3600)):
        out = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--time-limit", text, "--grace", "1m",
                    "--runtime", "1:30:00", "--", "true", json_out=True)
        assert out["time_limit_s"] == seconds and out["checkpoint_grace_s"] == 60, (text, out)
        assert out["expected_runtime_s"] == 5400, out
    for bad in ("2x", "1.5h", "-1h", "2:60:00", "99999999999999d"):
        p = d.cli("submit", "--tenant", "research/nlp", "--time-limit", bad, "--", "true", check=False)
        assert p.returncode == 2 and "--time-limit" in p.stderr and "H:MM:SS" in p.stderr, (bad, p.stderr)
    job = os.path.join(d.dir, "job.yaml")
    with open(job, "w") as f:
        f.write("tenant: research/nlp\ngpus: 1\ntime_limit_s: 90m\ncheckpoint_grace_s: 2m\ncommand: [\"true\"]\n")
    out = d.cli("submit", "-f", job, json_out=True)
    assert out["time_limit_s"] == 5400 and out["checkpoint_grace_s"] == 120, out
    with open(job, "w") as f:
        f.write("tenant: research/nlp\ntime_limit_s: soon\n")
    p = d.cli("submit", "-f", job, check=False)
    assert p.returncode == 2 and "job.yaml: time_limit_s" in p.stderr, p.stderr
    tenants = os.path.join(d.dir, "tenants.yaml")
    with open(tenants, "w") as f:
        f.write("tenants:\n  - path: misc\n    time_limit: {training: 2d, interactive: \"8:00:00\", inference: 600}\n")
    d.cli("apply", "-f", tenants)
    got = d.ok("GET", "/v1/tenants/misc")["time_limit"]
    assert got == {"training": 172800, "interactive": 28800, "inference": 600}, got
    with open(tenants, "w") as f:
        f.write("tenants:\n  - path: misc\n    time_limit: {training: 2 days}\n")
    p = d.cli("apply", "-f", tenants, check=False)
    assert p.returncode != 0 and "time_limit.training" in p.stderr + p.stdout, (p.stdout, p.stderr)
    assert d.ok("GET", "/v1/tenants/misc")["time_limit"]["training"] == 172800


if __name__ == "__main__":
    gpd.run([test_tenant_defaults_inherit_and_show, test_bad_time_limits_name_the_field, test_durations_with_units_everywhere,
             test_job_past_its_limit_is_stopped_and_fails, test_limits_survive_a_restart_and_old_jobs_load])
