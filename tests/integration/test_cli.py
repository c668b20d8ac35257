#!/usr/bin/env python3
"""The CLI as people use it: global flags anywhere, batches, readable times.

Each test starts a real gpupoold (examples/fleet.yaml, examples/tenants.yaml
applied) with a fresh SQLite store and drives the gpupool binary:
  - --json, --server, --token work after the command too (kubectl style),
    but not after "--" (those words belong to the job's command);
  - submit -f FILE with a list of jobs, and --array N, go as one request
    (POST /v1/jobs:batch) that gpupoold takes whole or refuses whole,
    naming the bad item; --array's jobs carry GPUPOOL_ARRAY_INDEX 0..N-1;
  - human output shows local date-times and ages, never epoch seconds;
    --json keeps the API's epoch numbers;
  - the CLI sends numbers as the user wrote them (a JSON number literal as
    a number, anything else as text) and the server's codec judges them,
    naming the field: one set of rules, exact decimals included.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

EPOCH = re.compile(r"(?<![0-9])1[0-9]{9}(?![0-9])")  # epoch seconds 2001..2286


def setup(d):
    d.cli("apply", "-f", gpd.TENANTS)


def job_count(d):
    return len(d.ok("GET", "/v1/jobs?limit=1000")["jobs"])


def write(d, name, text):
    path = os.path.join(d.dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def bare_cli(d, *args, env_server="http://127.0.0.1:1", env_token=""):
    """gpupool with the environment pointing nowhere: only flags can reach the daemon."""
    cmd = [os.path.join(gpd.BIN, "gpupool")] + list(args)
    env = dict(os.environ, GPUPOOL_SERVER=env_server, GPUPOOL_TOKEN=env_token, HOME=d.dir)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def test_global_flags_work_after_the_command(d):
    setup(d)
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})
    # --json after the command (refused as an unknown option before)
    p = d.cli("jobs", "--json")
    assert json.loads(p.stdout)["jobs"][0]["tenant"] == "research/nlp", p.stdout
    p = d.cli("jobs", "--state", "running", "--json")
    assert len(json.loads(p.stdout)["jobs"]) == 1, p.stdout
    # --server and --token after the command, both spellings, beat the environment
    p = bare_cli(d, "jobs", "--server", d.url, "--token", d.token, "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["jobs"], (p.returncode, p.stderr)
    p = bare_cli(d, "nodes", "--server=" + d.url, "--token=" + d.token)
    assert p.returncode == 0 and "h100-a-0" in p.stdout, (p.returncode, p.stderr)
    # before the command, as always
    p = bare_cli(d, "--server", d.url, "--token", d.token, "--json", "jobs")
    assert p.returncode == 0 and json.loads(p.stdout)["jobs"], p.stderr
    # mixed: some before, some after
    p = bare_cli(d, "--server", d.url, "tenants", "--token", d.token, "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["tenants"], p.stderr
    # after "--" the words are the job's command, not flags
    job = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--", "echo", "--json", "--server", "x",
                json_out=True)
    assert job["command"] == ["echo", "--json", "--server", "x"], job
    # a global flag without its value, or an unknown flag before the command: usage errors
    p = bare_cli(d, "jobs", "--server")
    assert p.returncode == 2 and "--server needs a value" in p.stderr, (p.returncode, p.stderr)
    p = bare_cli(d, "--bogus", "jobs")
    assert p.returncode == 2 and "unknown option --bogus" in p.stderr, (p.returncode, p.stderr)


def test_submit_of_a_multi_job_file(d):
    setup(d)
    yaml_list = write(d, "jobs.yaml",
                      "- {name: prep, gpus: 1}\n"
                      "- name: train\n  gpus: 8\n  gpu_types: [H100]\n  command: [python3, train.py]\n"
                      "- {name: eval, tenant: research/vision, gpus: 2}\n")
    # flags win over every item's fields, as over a single job's
    out = d.cli("submit", "-f", yaml_list, "--tenant", "research/nlp", json_out=True)
    assert len(out["ids"]) == 3 and out["ids"] == sorted(out["ids"]), out
    assert [j["name"] for j in out["jobs"]] == ["prep", "train", "eval"], out
    assert all(j["tenant"] == "research/nlp" for j in out["jobs"]), out
    assert out["jobs"][1]["command"] == ["python3", "train.py"], out
    for jid, name in zip(out["ids"], ["prep", "train", "eval"]):
        assert d.ok("GET", "/v1/jobs/%d" % jid)["name"] == name
    # a JSON list, human output: one row per job
    json_list = write(d, "jobs.json", json.dumps([{"tenant": "research/vision", "name": "j%d" % i, "gpus": 1}
                                                 for i in range(4)]))
    p = d.cli("submit", "-f", json_list)
    rows = [line for line in p.stdout.splitlines()[1:] if line.strip()]
    assert len(rows) == 4 and all("research/vision" in r for r in rows), p.stdout
    assert job_count(d) == 7
    # one job in a file still goes the single way
    one = write(d, "one.yaml", "tenant: research/nlp\ngpus: 1\nname: single\n")
    job = d.cli("submit", "-f", one, json_out=True)
    assert job["name"] == "single" and "ids" not in job, job
    # the batch is audited as one submit naming its ids
    audit = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    first, last = out["ids"][0], out["ids"][-1]
    assert any(a["action"] == "job.submit" and a["target"] == "job/%d..%d" % (first, last) for a in audit), audit


def test_array_gives_n_ids_and_each_job_its_index(d):
    setup(d)
    out = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--name", "sweep", "--array", "5", "--",
                "sh", "-c", "train --shard $GPUPOOL_ARRAY_INDEX", json_out=True)
    ids = out["ids"]
    assert len(ids) == 5 and len(set(ids)) == 5, out
    assert ids == list(range(ids[0], ids[0] + 5)), ids  # consecutive: one engine batch
    for i, jid in enumerate(ids):
        job = d.ok("GET", "/v1/jobs/%d" % jid)
        assert job["env"] == {"GPUPOOL_ARRAY_INDEX": str(i), "GPUPOOL_ARRAY_SIZE": "5"}, job
        assert job["name"] == "sweep" and job["command"][0] == "sh", job
    # the env the user gave is kept beside the index
    f = write(d, "env.yaml", "tenant: research/vision\ngpus: 1\nenv: {EPOCHS: '3'}\n")
    out = d.cli("submit", "-f", f, "--array", "2", json_out=True)
    assert [j["env"] for j in out["jobs"]] == [{"EPOCHS": "3", "GPUPOOL_ARRAY_INDEX": "0", "GPUPOOL_ARRAY_SIZE": "2"},
                                               {"EPOCHS": "3", "GPUPOOL_ARRAY_INDEX": "1", "GPUPOOL_ARRAY_SIZE": "2"}]
    # each array job is an ordinary logged submit: a restart replays them all
    d.stop()
    d.start()
    for i, jid in enumerate(ids):
        assert d.ok("GET", "/v1/jobs/%d" % jid)["env"]["GPUPOOL_ARRAY_INDEX"] == str(i)
    # human output: one row per job
    p = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--array", "3")
    assert len([line for line in p.stdout.splitlines()[1:] if line.strip()]) == 3, p.stdout
    # the bounds
    st, err = d.call("POST", "/v1/jobs:batch", {"job": {"tenant": "research/nlp"}, "array": 10001})
    assert st == 400 and err["error"]["field"] == "array" and "10000" in err["error"]["message"], (st, err)
    st, err = d.call("POST", "/v1/jobs:batch", {"jobs": []})
    assert st == 400 and err["error"]["field"] == "jobs", (st, err)
    p = d.cli("submit", "--tenant", "research/nlp", "--array", "0", check=False)
    assert p.returncode == 2, p
    # the index is gpupoold's to set
    st, err = d.call("POST", "/v1/jobs:batch",
                     {"job": {"tenant": "research/nlp", "env": {"GPUPOOL_ARRAY_INDEX": "7"}}, "array": 2})
    assert st == 400 and err["error"]["field"] == "job.env", (st, err)


def test_a_batch_with_one_bad_item_creates_nothing_and_names_it(d):
    setup(d)
    before = job_count(d)
    audit_before = len(d.ok("GET", "/v1/audit?limit=1000")["audit"])
    cases = [
        # (jobs, field, status): a field the API checks, then rules only the engine knows
        ([{"gpus": 1}, {"gpus": 200}, {"gpus": 1}], "jobs[1].gpus", 400),
        ([{"gpus": 1}, {"gpus": 1}, {"gpus": 1, "bogus": 1}], "jobs[2].bogus", 400),
        ([{"gpus": 1}, {"gpus": 1, "tenant": "research"}], "jobs[1].tenant", 400),       # has sub-tenants
        ([{"gpus": 1}, {"gpus": 1, "tenant": "research/nope"}], "jobs[1].tenant", 404),
        ([{"gpus": 1}, {"gpus": 1, "gpu_types": ["B200"]}], "jobs[1].gpu_types", 400),
        ([{"gpus": 1}, {"tenant": "product/ads", "share": {"mps": 20}}], "jobs[1].isolation", 400),  # untrusted
        ([{"gpus": 1}, {"gpus": 1}, {"share": {"mig": "9g.1tb"}}], "jobs[2].share.mig", 400),
        ([{"gpus": 1}, {"kind": "training", "share": {"timeslice": True}}], "jobs[1].isolation", 400),
    ]
    for jobs, field, status in cases:
        body = {"jobs": [dict({"tenant": "research/nlp"}, **j) for j in jobs]}
        st, err = d.call("POST", "/v1/jobs:batch", body)
        assert st == status and err["error"]["field"] == field, (jobs, st, err)
        assert err["error"]["message"].startswith(field.split(".")[0] + ":"), err
        assert job_count(d) == before, jobs
    # through the CLI: exit 6 (invalid), the item named on stderr, nothing created
    bad = write(d, "bad.yaml", "- {tenant: research/nlp, gpus: 1}\n- {tenant: research/nlp, gpus: 1}\n"
                               "- {tenant: research/nlp, gpus: 1, replicas: 0}\n")
    p = d.cli("submit", "-f", bad, check=False)
    assert p.returncode == 6 and "jobs[2].replicas" in p.stderr, (p.returncode, p.stderr)
    p = d.cli("submit", "--tenant", "research/nlp", "--mig", "9g.1tb", "--array", "3", check=False)
    assert p.returncode == 6 and "job.share.mig" in p.stderr, (p.returncode, p.stderr)
    assert job_count(d) == before
    # the engine's refusals were audited (they reached the engine thread), and created nothing
    refused = [a for a in d.ok("GET", "/v1/audit?limit=1000")["audit"][audit_before:] if a["action"] == "job.submit"]
    assert refused and all(a["result"] != "ok" for a in refused), refused
    # scope: a member may not slip a job into another team's batch
    tok = d.ok("POST", "/v1/tokens", {"name": "alice", "role": "member", "scope": "research/nlp",
                                      "user": "alice"})["token"]
    st, err = d.call("POST", "/v1/jobs:batch", {"jobs": [{"tenant": "research/nlp"}, {"tenant": "research/vision"}]},
                     token=tok)
    assert st == 404 and err["error"]["field"] == "jobs[1].tenant", (st, err)
    st, out = d.call("POST", "/v1/jobs:batch", {"jobs": [{"tenant": "research/nlp"}, {"tenant": "research/nlp"}]},
                     token=tok)
    assert st == 201 and [j["user"] for j in out["jobs"]] == ["alice", "alice"], (st, out)
    assert job_count(d) == before + 2


def reclaim_scenario(d):
    """vision borrows nlp's idle H100 with a long grace; nlp's gang then waits
    with a reason that names the moment the grace ends (t=SECONDS)."""
    d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 8, "gpu_types": ["H100"]})
    for _ in range(2):
        d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 8, "gpu_types": ["H100"],
                                  "checkpoint_grace_s": 3600})
    d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 8, "gpu_types": ["H100"]})
    nlp = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "replicas": 2, "gpus": 8, "gpu_types": ["H100"]})
    assert "t=" in nlp["reason"], nlp
    return nlp["id"]


def test_human_output_shows_no_raw_epoch(d):
    setup(d)
    nlp = reclaim_scenario(d)
    for args in (["jobs"], ["job", str(nlp)], ["job", "1"], ["audit"], ["token", "list"]):
        p = d.cli(*args)
        assert not EPOCH.search(p.stdout), (args, p.stdout)
    job = d.cli("job", str(nlp)).stdout
    assert re.search(r"submit_time +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \((just now|\d+s ago)\)", job), job
    assert re.search(r"grace ends at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(in (59m|60m|1h)\)", job), job
    assert re.search(r"^  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  submit", job, re.M), job
    # local time follows TZ: the same second, two zones, two hours apart
    utc = d.cli("job", str(nlp), "--json")
    submit = json.loads(utc.stdout)["submit_time"]
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, HOME=d.dir)
    for tz, shift in (("UTC", 0), ("XST-2", 7200)):
        p = subprocess.run([os.path.join(gpd.BIN, "gpupool"), "job", str(nlp)], env=dict(env, TZ=tz),
                           capture_output=True, text=True, timeout=60)
        want = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(submit + shift))
        assert "submit_time  " + want in p.stdout, (tz, want, p.stdout)
    # usage takes dates and ages as well as epoch seconds
    for frm in ("1d", time.strftime("%Y-%m-%d", time.localtime(time.time() - 86400)), "0"):
        d.cli("usage", "--from", frm, "--json")
    p = d.cli("usage", "--from", "yesterday", check=False)
    assert p.returncode == 2 and "--from" in p.stderr, p


def test_json_keeps_epoch_numbers(d):
    setup(d)
    nlp = reclaim_scenario(d)
    now = time.time()
    job = json.loads(d.cli("job", str(nlp), "--json").stdout)
    assert isinstance(job["submit_time"], int) and abs(job["submit_time"] - now) < 120, job
    assert all(isinstance(h["time"], int) for h in job["history"]), job
    assert re.search(r"t=\d{10}", job["reason"]), job  # the API's reason as the engine wrote it
    audit = json.loads(d.cli("audit", "--json").stdout)["audit"]
    assert audit and all(isinstance(a["time"], int) for a in audit), audit


def test_the_server_judges_what_the_user_wrote(d):
    setup(d)
    before = d.ok("GET", "/v1/tenants/research/nlp")
    jobs_before = job_count(d)
    cases = [
        (["quota", "set", "research/nlp", "--weight", "abc"], "weight"),        # was sent as weight 0
        (["quota", "set", "research/nlp", "--weight", "1.5x"], "weight"),       # was sent as 1.5
        (["quota", "set", "research/nlp", "--lend", "maybe"], "lend"),          # was sent as false
        (["quota", "set", "research/nlp", "--guarantee", "H100=0.0005"], "guarantee.gpu.H100"),
        (["quota", "set", "research/nlp", "--limit", "H100=4GPUs"], "limit.gpu.H100"),
        (["quota", "set", "research/nlp", "--guarantee", "H100=1,cpu_millis=1.5"], "guarantee.cpu_millis"),
        (["submit", "--tenant", "research/nlp", "--gpus", "1.5"], "gpus"),
        (["submit", "--tenant", "research/nlp", "--gpus", "99999999999999999999"], "gpus"),
    ]
    for args, field in cases:
        p = d.cli(*args, check=False)
        assert p.returncode == 6 and field in p.stderr, (args, p.returncode, p.stderr)
    assert d.ok("GET", "/v1/tenants/research/nlp") == before
    assert job_count(d) == jobs_before
    # what is valid goes through exactly: three decimals, a real weight
    d.cli("tenants", "create", "research/audio", "--limit", "H100=2.675,A100=1e1", "--weight", "2.5", "--lend", "no")
    audio = d.ok("GET", "/v1/tenants/research/audio")
    assert audio["limit"]["gpu"]["H100"] == 2.675 and audio["limit"]["gpu"]["A100"] == 10, audio
    assert audio["weight"] == 2.5 and audio["lend"] is False, audio


if __name__ == "__main__":
    gpd.run([test_global_flags_work_after_the_command, test_submit_of_a_multi_job_file,
             test_array_gives_n_ids_and_each_job_its_index, test_a_batch_with_one_bad_item_creates_nothing_and_names_it,
             test_human_output_shows_no_raw_epoch, test_json_keeps_epoch_numbers,
             test_the_server_judges_what_the_user_wrote])
