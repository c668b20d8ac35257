#!/usr/bin/env python3
"""Job life cycle, borrowing and reclaim, and restart, through the API and CLI.

Each test starts a real gpupoold (examples/fleet.yaml: 32 H100 in blocks
blk-a and blk-b, 8 A100, 8 L40S) with a fresh SQLite store.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def apply_tenants(d):
    p = d.cli("apply", "-f", gpd.TENANTS)
    assert "created" in p.stdout and "research/nlp" in p.stdout, p.stdout


def test_job_life_cycle(d):
    apply_tenants(d)
    # submit through the CLI, as JSON
    job = d.cli("submit", "--tenant", "research/nlp", "--name", "train", "--gpus", "8", "--gpu-type", "H100",
                "--", "python3", "train.py", json_out=True)
    assert job["state"] == "running", job
    assert job["class"] == "guaranteed", job
    assert len(job["placement"]) == 1 and len(job["placement"][0]["gpus"]) == 8
    assert "not executed" in job["execution"]
    assert job["command"] == ["python3", "train.py"]
    jid = job["id"]
    # one job, with history
    one = d.ok("GET", "/v1/jobs/%d" % jid)
    # the submit is its own kind of entry, not a pending -> pending step
    assert one["history"][0]["kind"] == "submit" and one["history"][0]["from"] is None, one
    assert [h["to"] for h in one["history"] if h["kind"] == "transition"] == ["admitted", "running"], one
    # listed, human table too
    assert str(jid) in d.cli("jobs").stdout
    assert any(j["id"] == jid for j in d.ok("GET", "/v1/jobs?state=running")["jobs"])
    # usage accrues while it runs
    gpd.wait_for(lambda: any(u["tenant"] == "research/nlp" and u["gpu_seconds"] > 0
                             for u in d.ok("GET", "/v1/usage")["usage"]), timeout=5, what="usage")
    # cancel: running -> cancelled after its grace (default 30 s; the node
    # never reports, so it ends at the grace deadline)
    out = d.cli("--json", "cancel", str(jid))
    assert out.returncode == 0
    cancelled = d.ok("GET", "/v1/jobs/%d" % jid)
    assert cancelled["state"] in ("preempting", "cancelled"), cancelled
    assert any(h["kind"] == "stop" for h in cancelled["history"]), cancelled
    # a pending job cancels at once
    big = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 8, "replicas": 8, "gpu_types": ["H100"],
                                   "wait_for_fleet": True})
    assert big["state"] == "pending", big
    gone = d.ok("DELETE", "/v1/jobs/%d" % big["id"], expect=(202,))
    assert gone["state"] == "cancelled", gone
    st, err = d.call("DELETE", "/v1/jobs/%d" % big["id"])
    assert st == 409 and err["error"]["field"] == "id", (st, err)
    # nodes, drain, undrain
    assert "h100-a-0" in d.cli("nodes").stdout
    d.cli("drain", "h100-a-0")
    assert any(n["name"] == "h100-a-0" and n["draining"] for n in d.ok("GET", "/v1/nodes")["nodes"])
    d.cli("drain", "h100-a-0", "--undo")
    assert not any(n["name"] == "h100-a-0" and n["draining"] for n in d.ok("GET", "/v1/nodes")["nodes"])
    # the audit chain holds every change
    assert "audit chain ok" in d.cli("audit", "verify").stdout
    actions = [a["action"] for a in d.ok("GET", "/v1/audit?limit=1000")["audit"]]
    for a in ("token.create", "tenant.apply", "job.submit", "job.cancel", "node.drain", "node.undrain"):
        assert a in actions, (a, actions)


def test_apply_is_idempotent_and_atomic(d):
    apply_tenants(d)
    again = d.cli("--json", "apply", "-f", gpd.TENANTS)
    out = __import__("json").loads(again.stdout)
    assert out["created"] == [] and out["updated"] == [] and len(out["unchanged"]) == 6, out
    before = d.ok("GET", "/v1/tenants")
    # a file whose third entry breaks a rule changes nothing
    bad = ("tenants:\n  - path: research\n    guarantee: {gpu: {H100: 24}}\n  - path: research/nlp\n    guarantee: {gpu: {H100: 8}}\n"
           "  - path: research/audio\n    guarantee: {gpu: {H100: 4}}\n"
           "  - path: research/video\n    guarantee: {gpu: {H100: 100}}\n")
    st, err = d.call("POST", "/v1/tenants:apply", raw=bad.encode(), content_type="application/yaml")
    assert st == 422, (st, err)
    assert err["error"]["field"].startswith("tenants[3]"), err
    assert d.ok("GET", "/v1/tenants") == before
    # create through the CLI (quota set changes existing tenants only), then move and delete
    d.cli("tenants", "create", "research/audio", "--guarantee", "H100=0")
    assert d.ok("GET", "/v1/tenants/research/audio")["path"] == "research/audio"
    d.ok("POST", "/v1/tenants:move", {"from": "research/audio", "to": "product/audio"})
    st, _ = d.call("GET", "/v1/tenants/research/audio")
    assert st == 404
    d.ok("DELETE", "/v1/tenants/product/audio")
    st, _ = d.call("GET", "/v1/tenants/product/audio")
    assert st == 404


def test_borrow_and_reclaim(d):
    apply_tenants(d)
    # vision fills its guarantee (8) and borrows nlp's idle 16 H100
    own = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "name": "v-own", "gpus": 8, "gpu_types": ["H100"]})
    borrowed = [d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "name": "v-borrow-%d" % i, "gpus": 4,
                                          "gpu_types": ["H100"], "checkpoint_grace_s": 1}) for i in range(4)]
    assert own["class"] == "guaranteed"
    assert all(b["state"] == "running" and b["class"] == "burstable" for b in borrowed), borrowed
    # search takes the last free H100 node with its own guarantee
    d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 8, "gpu_types": ["H100"]})
    # nlp comes back: a 2 x 8 gang inside its guarantee
    nlp = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "name": "nlp-gang", "replicas": 2, "gpus": 8,
                                    "gpu_types": ["H100"]})
    assert nlp["state"] == "pending" and "reclaim" in nlp["reason"], nlp
    # the borrowers are preempted with reasons, then requeued; nlp binds
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % nlp["id"])["state"] == "running", timeout=15, what="nlp bound")
    bound = d.ok("GET", "/v1/jobs/%d" % nlp["id"])
    assert bound["class"] == "guaranteed"
    for b in borrowed:
        v = d.ok("GET", "/v1/jobs/%d" % b["id"])
        pre = [h for h in v["history"] if h["kind"] == "preempt"]
        assert pre and "research/nlp" in pre[0]["reason"], v["history"]
        assert v["state"] == "pending", v
    # the owner's job was never touched
    assert d.ok("GET", "/v1/jobs/%d" % own["id"])["state"] == "running"
    usage = d.ok("GET", "/v1/usage")["usage"]
    assert any(u["tenant"] == "research/vision" and u["class"] == "burstable" for u in usage), usage


def snapshot(d):
    jobs = d.ok("GET", "/v1/jobs?limit=1000")["jobs"]
    for j in jobs:
        j.pop("reason", None)  # wait reasons are recomputed on the next pass
        j.pop("wait", None)
    return {
        "jobs": jobs,
        "tenants": d.ok("GET", "/v1/tenants")["tenants"],
        # up to a day ahead: an interval opened in the current second counts
        # too (to = now would leave it out until the clock ticks over)
        "usage": [(u["tenant"], u["gpu_type"], u["class"])
                  for u in d.ok("GET", "/v1/usage?to=%d" % (time.time() + 86400))["usage"]],
        "nodes": [(n["name"], n["gpus_free"], n["draining"]) for n in d.ok("GET", "/v1/nodes")["nodes"]],
        # last use is kept to the minute, best effort (auth.h): not part of what a restart must keep
        "tokens": [{k: v for k, v in t.items() if k != "last_used"} for t in d.ok("GET", "/v1/tokens")["tokens"]],
    }


def test_restart_keeps_everything(d):
    apply_tenants(d)
    for i in range(6):
        d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 4, "gpu_types": ["H100"], "priority": i})
    d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 8, "gpu_types": ["A100"]})
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 8, "replicas": 6, "wait_for_fleet": True})  # waits
    d.ok("POST", "/v1/nodes/l40s-d-0/drain", {"drain": True})
    d.ok("POST", "/v1/tokens", {"name": "alice", "role": "member", "scope": "research/nlp", "user": "alice"})
    before = snapshot(d)
    d.stop()  # graceful
    d.start()
    assert snapshot(d) == before
    d.kill9()  # and the hard way
    d.start()
    assert snapshot(d) == before
    assert "audit chain ok" in d.cli("audit", "verify").stdout
    # the ids go on where they stopped
    nxt = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})
    assert nxt["id"] == max(j["id"] for j in before["jobs"]) + 1


def test_tampering_is_detected(d):
    """An edited audit row breaks the chain at that row; a job row that no
    longer matches the event log stops the restart, naming the job."""
    import sqlite3
    apply_tenants(d)
    jid = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 8, "gpu_types": ["H100"]})["id"]
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})
    db = os.path.join(d.dir, "gpupool.db")
    d.stop()
    con = sqlite3.connect(db)
    con.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 3")
    con.commit()
    con.close()
    d.start()
    v = d.ok("GET", "/v1/audit/verify")
    assert not v["ok"] and v["first_broken"] == 3, v
    p = d.cli("audit", "verify", check=False)
    assert p.returncode == 1 and "seq 3" in p.stderr, (p.returncode, p.stderr)
    d.stop()
    con = sqlite3.connect(db)
    con.execute("UPDATE jobs SET state = 'pending', placement_json = NULL WHERE id = ?", (jid,))
    con.commit()
    con.close()
    try:
        d.start()
        raise AssertionError("gpupoold started on a store that disagrees with its log")
    except RuntimeError as e:
        assert "job %d" % jid in str(e), str(e)


def test_tls_and_listen_policy(d):
    """HTTPS with a self-signed certificate; plain HTTP off loopback refused."""
    import shutil
    import subprocess
    d.stop()
    if not shutil.which("openssl"):
        print("     (openssl missing: TLS not checked)")
        return
    cert, key = os.path.join(d.dir, "cert.pem"), os.path.join(d.dir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    tls = gpd.Daemon(workdir=d.dir, extra=["--tls-cert", cert, "--tls-key", key])
    tls.start()
    try:
        p = subprocess.run([os.path.join(gpd.BIN, "gpupool"), "--server", "https://127.0.0.1:%d" % tls.port,
                            "--cacert", cert, "--token", tls.token, "nodes"], capture_output=True, text=True)
        assert p.returncode == 0 and "h100-a-0" in p.stdout, (p.stdout, p.stderr)
    finally:
        tls.stop()
    p = subprocess.run([os.path.join(gpd.BIN, "gpupoold"), "--listen", "0.0.0.0:0",
                        "--store", "sqlite:" + os.path.join(d.dir, "other.db")], capture_output=True, text=True)
    assert p.returncode == 1 and "plain HTTP" in p.stderr, p.stderr
    assert not os.path.exists(os.path.join(d.dir, "other.db"))
    d.start()


def test_a_port_in_use_fails_before_anything_is_written(d):
    """A second gpupoold on a port in use exits at once with one line naming
    the address and the reason, and creates neither a store nor a token."""
    workdir = os.path.join(d.dir, "second")
    os.mkdir(workdir)
    listen = "127.0.0.1:%d" % d.port  # the running daemon holds it
    p = subprocess.run([os.path.join(gpd.BIN, "gpupoold"), "--listen", listen,
                        "--store", "sqlite:" + os.path.join(workdir, "gpupool.db"), "--fleet", gpd.FLEET],
                       cwd=workdir, capture_output=True, text=True, timeout=30)
    assert p.returncode != 0, p.stderr
    lines = [line for line in p.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert listen in lines[0] and "Address already in use" in lines[0], lines
    assert os.listdir(workdir) == [], os.listdir(workdir)


if __name__ == "__main__":
    gpd.run([test_job_life_cycle, test_apply_is_idempotent_and_atomic, test_borrow_and_reclaim,
             test_restart_keeps_everything, test_tampering_is_detected, test_tls_and_listen_policy,
             test_a_port_in_use_fails_before_anything_is_written])
