#!/usr/bin/env python3
"""The CLI's conveniences, against a real gpupoold (issue 12, section 4 and
the typo part of section 2):
  - a mistyped command or flag is refused with the nearest one, nothing sent;
  - `gpupool completion bash|zsh` loads in the shell and completes commands
    and each command's flags (from the same usage text as --help);
  - `cancel ID...`, `jobs --user U`, `tenants PATH` (404 with a suggestion
    when PATH does not exist), `why ID`;
  - `jobs --watch` and `job ID --watch` print plain refreshes when stdout is
    not a terminal; `job ID --watch` ends when the job ends;
  - times typed as ISO 8601 with a zone or relative (-24h);
  - the jobs table shows USER, AGE, TIME and NODES, and a fractional job's
    share ("mps 25%").
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def setup(d):
    d.cli("apply", "-f", gpd.TENANTS)


def submit(d, **job):
    return d.ok("POST", "/v1/jobs", job)["id"]


def test_typos_are_refused_with_the_nearest_name(d):
    setup(d)
    p = d.cli("jbos", check=False)
    assert p.returncode == 2 and "did you mean jobs?" in p.stderr, (p.returncode, p.stderr)
    assert "Commands:" not in p.stderr, p.stderr  # the nearest one, not the whole usage
    p = d.cli("jobs", "--tenat", "research", check=False)
    assert p.returncode == 2 and "unknown flag --tenat; did you mean --tenant?" in p.stderr, p.stderr
    p = d.cli("submit", "--tenant", "research/nlp", "--gpu", "1", check=False)
    assert p.returncode == 2 and "did you mean --gpus?" in p.stderr, p.stderr
    assert d.ok("GET", "/v1/jobs")["jobs"] == []  # nothing was sent
    # words after "--" belong to the job's command, never checked
    p = d.cli("submit", "--tenant", "research/nlp", "--gpus", "1", "--", "train.py", "--tenat", "x")
    assert d.ok("GET", "/v1/jobs")["jobs"][0]["command"] == ["train.py", "--tenat", "x"]


def complete(d, shell, words):
    """The completions bash (or zsh through bashcompinit) offers for words."""
    script = os.path.join(d.dir, "complete.sh")
    with open(script, "w") as f:
        f.write(d.cli("completion", shell).stdout)
    line = " ".join(words)
    cword = len(words) - 1
    body = ('source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _gpupool; echo "${COMPREPLY[*]}"'
            % (script, line, cword))
    argv = ["bash", "-c", body] if shell == "bash" else ["zsh", "-c", body]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout.split()


def test_completion_scripts_load_and_complete(d):
    gpupool = os.path.join(gpd.BIN, "gpupool")
    p = subprocess.run(["bash", "-c", "source <(%s completion bash) && complete -p gpupool" % gpupool],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "_gpupool" in p.stdout, (p.returncode, p.stdout, p.stderr)
    assert set(complete(d, "bash", ["gpupool", "jo"])) == {"job", "jobs"}
    assert "--tenant" in complete(d, "bash", ["gpupool", "jobs", "--te"])
    assert "--watch" in complete(d, "bash", ["gpupool", "--json", "job", "--w"])
    assert complete(d, "bash", ["gpupool", "token", "re"]) == ["revoke"]
    assert complete(d, "bash", ["gpupool", "quota", "s"]) == ["set"]
    if shutil.which("zsh"):
        assert set(complete(d, "zsh", ["gpupool", "jo"])) == {"job", "jobs"}
    p = d.cli("completion", "fish", check=False)
    assert p.returncode == 2 and "bash|zsh" in p.stderr


def test_cancel_takes_several_ids_and_goes_on_past_a_bad_one(d):
    setup(d)
    # pending (over research/vision's limit), so a cancel ends them at once
    a = submit(d, tenant="research/vision", gpus=8, replicas=4)
    b = submit(d, tenant="research/vision", gpus=8, replicas=4)
    p = d.cli("cancel", str(a), "999999", str(b), check=False)
    assert p.returncode == 5, (p.returncode, p.stderr)  # the first failure's code
    states = {j["id"]: j["state"] for j in d.ok("GET", "/v1/jobs")["jobs"]}
    assert states[a] == "cancelled" and states[b] == "cancelled", states


def test_jobs_of_one_user(d):
    setup(d)
    submit(d, tenant="research/nlp", gpus=1, user="alice")
    bob = submit(d, tenant="research/nlp", gpus=1, user="bob")
    jobs = d.cli("jobs", "--user", "bob", json_out=True)["jobs"]
    assert [j["id"] for j in jobs] == [bob], jobs
    table = d.cli("jobs", "--user", "bob").stdout
    assert "bob" in table and "alice" not in table, table


def test_tenants_of_one_subtree_and_a_missing_one(d):
    setup(d)
    out = d.cli("tenants", "research").stdout
    assert "research/nlp" in out and "research/vision" in out and "product" not in out, out
    p = d.cli("tenants", "research/nlpp", check=False)
    assert p.returncode == 5 and "no tenant research/nlpp" in p.stderr and "research/nlp" in p.stderr, p.stderr


def test_a_tenant_filter_that_names_nothing_is_404_with_the_nearest(d):
    setup(d)
    for args in (["jobs", "--tenant", "research/nlpp"], ["usage", "--tenant", "research/nlpp"]):
        p = d.cli(*args, check=False)
        assert p.returncode == 5, (args, p.returncode, p.stdout, p.stderr)
        assert "no tenant research/nlpp; did you mean research/nlp?" in p.stderr, p.stderr
    # a bad state filter lists every state
    p = d.cli("jobs", "--state", "runing", check=False)
    assert p.returncode == 6, p
    for state in ("pending", "admitted", "running", "preempting", "succeeded", "failed", "cancelled", "live"):
        assert state in p.stderr, p.stderr
    # an existing tenant without jobs is an empty table, not an error
    assert d.cli("jobs", "--tenant", "research/nlp", json_out=True)["jobs"] == []


def test_why_names_the_blocking_limit_and_what_to_change(d):
    setup(d)
    # research/vision's limit is 24 H100: 4 x 8 can never start under it
    jid = submit(d, tenant="research/vision", gpus=8, replicas=4, gpu_types=["H100"])
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % jid).get("wait", {}).get("code") == "limit",
                 what="the limit wait")
    wait = d.ok("GET", "/v1/jobs/%d" % jid)["wait"]
    assert wait["tenant"] == "research/vision" and wait["resource"] == "H100", wait
    assert wait["demand"] == 32 and wait["limit"] == 24, wait
    out = d.cli("why", str(jid)).stdout
    assert "blocked:   the limit of research/vision on H100" in out, out
    assert "gpupool quota set research/vision --limit H100=32" in out, out
    p = d.cli("why", "424242", check=False)
    assert p.returncode == 5


def test_watch_prints_plain_refreshes_and_ends_with_the_job(d):
    setup(d)
    jid = submit(d, tenant="research/vision", gpus=8, replicas=4)  # pending: a cancel ends it at once
    gpupool = os.path.join(gpd.BIN, "gpupool")
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=d.token, HOME=d.dir)
    watcher = subprocess.Popen([gpupool, "job", str(jid), "--watch", "--interval", "1"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    d.ok("DELETE", "/v1/jobs/%d" % jid)
    out, err = watcher.communicate(timeout=30)  # ends by itself once the job has ended
    assert watcher.returncode == 0, err
    assert "\033" not in out and out.count("--- ") >= 2, out
    assert "cancelled" in out.split("--- ")[-1], out
    lister = subprocess.Popen([gpupool, "jobs", "--all", "--watch", "--interval", "1"], env=env,  # it has ended
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, _ = lister.communicate(timeout=3.5)
    except subprocess.TimeoutExpired:
        lister.terminate()
        out, _ = lister.communicate(timeout=10)
    assert "\033" not in out and out.count("--- ") >= 2 and "research/vision" in out, out


def test_times_in_iso_8601_and_relative(d):
    setup(d)
    for t in ("-24h", "24h", "2026-11-01T00:00:00Z", "2026-11-01T08:00+08:00"):
        p = d.cli("usage", "--from", t, check=False)
        assert p.returncode == 0, (t, p.stderr)
    p = d.cli("usage", "--from", "2026-11-01T08:00+25:00", check=False)
    assert p.returncode == 2 and "ISO 8601" in p.stderr, p.stderr


def test_the_jobs_table_shows_user_age_nodes_and_shares(d):
    setup(d)
    alice = submit(d, tenant="research/nlp", gpus=1, user="alice")
    submit(d, tenant="research/nlp", share={"mps": 25}, wait_for_fleet=True)  # no GPU here is in MPS mode
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % alice)["state"] == "running", what="running")
    out = d.cli("jobs").stdout
    head = out.splitlines()[0].split()
    for col in ("USER", "AGE", "TIME", "NODES", "GPUS"):
        assert col in head, head
    assert "mps 25%" in out and "alice" in out, out
    assert "bound to 1 H100 GPU (" in out, out  # counts agree with their nouns
    node = d.ok("GET", "/v1/jobs/%d" % alice)["placement"][0]["node"]
    assert node in out, out


if __name__ == "__main__":
    gpd.run([test_typos_are_refused_with_the_nearest_name, test_completion_scripts_load_and_complete,
             test_cancel_takes_several_ids_and_goes_on_past_a_bad_one, test_jobs_of_one_user,
             test_tenants_of_one_subtree_and_a_missing_one, test_a_tenant_filter_that_names_nothing_is_404_with_the_nearest,
             test_why_names_the_blocking_limit_and_what_to_change,
             test_watch_prints_plain_refreshes_and_ends_with_the_job, test_times_in_iso_8601_and_relative,
             test_the_jobs_table_shows_user_age_nodes_and_shares])
