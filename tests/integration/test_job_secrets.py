#!/usr/bin/env python3
"""Tenants' secrets (issue 29: "secrets do not travel in plain specs"),
against the real gpupoold and a real agent (sim backend):

  - a tenant-admin sets a secret; a job of a tenant below names it in
    env_from_secret and its replica finds the value in its environment
    (it writes it to its checkpoint folder), and the node's assignment
    carries it only in the entry of the replica to run;
  - the value is nowhere else: not in GET /v1/jobs or /v1/jobs/ID, not in
    the store's bytes (the SQLite file and its WAL), not in the audit log
    (which names the secret), not in gpupoold's log, not in a listing;
  - a job naming another tenant's secret is refused at submit (400
    env_from_secret.NAME), as is one naming a secret that does not exist;
  - a member may not set secrets, a tenant-admin of another subtree does
    not see the tenant; deletes are audited.
"""
import json
import os
import secrets
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, end_replicas, sim_nodes, wait_state, write_node_file  # noqa: E402

WRITES_THE_SECRET = ('printf %s "$HF_TOKEN" > "$GPUPOOL_CHECKPOINT_DIR/got.tmp"; '
                     'mv "$GPUPOOL_CHECKPOINT_DIR/got.tmp" "$GPUPOOL_CHECKPOINT_DIR/got"; '
                     'trap "exit 0" TERM; while :; do sleep 0.1; done')


def token(d, name, role, scope, user=None):
    args = ["token", "create", "--name", name, "--role", role, "--scope", scope] + (["--user", user] if user else [])
    return d.cli(*args, json_out=True)["token"]


def set_secret(d, tok, tenant, name, value, check=True):
    cmd = [os.path.join(gpd.BIN, "gpupool"), "secret", "set", tenant, name, "--value-stdin"]
    env = dict(os.environ, GPUPOOL_SERVER=d.url, GPUPOOL_TOKEN=tok, HOME=d.dir)
    p = subprocess.run(cmd, input=value, env=env, capture_output=True, text=True, timeout=30)
    assert not check or p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return p


def job_body(tenant, wanted):
    return {"tenant": tenant, "gpus": 1, "gpu_types": ["H100"], "checkpoint_grace_s": 2,
            "command": ["sh", "-c", WRITES_THE_SECRET], "env_from_secret": wanted}


def test_a_secret_reaches_its_replica_and_nothing_else(d):
    for t in ("research", "research/nlp", "product", "product/ads"):
        d.ok("PUT", "/v1/tenants/" + t, {})
    value = "hf_" + secrets.token_hex(16)
    research_admin = token(d, "ra", "tenant-admin", "research")
    product_admin = token(d, "pa", "tenant-admin", "product")
    member = token(d, "alice", "member", "research/nlp", user="alice")

    assert set_secret(d, research_admin, "research", "hf", value).stdout.startswith("secret hf of research set")
    set_secret(d, product_admin, "product/ads", "ads", "ads-" + secrets.token_hex(8))
    status, out = d.call("PUT", "/v1/secrets/hf?tenant=research/nlp", {"value": "x"}, token=member)
    assert status == 403, out
    status, out = d.call("PUT", "/v1/secrets/hf?tenant=research", {"value": "x"}, token=product_admin)
    assert status == 404 and out["error"]["field"] == "tenant", out
    status, out = d.call("PUT", "/v1/secrets/..x?tenant=research", {"value": "x"}, token=research_admin)
    assert status == 400 and out["error"]["field"] == "name", out
    assert d.call("GET", "/v1/secrets/hf?tenant=research")[0] == 405  # a value is never read back
    listing = d.ok("GET", "/v1/secrets?tenant=research", token=research_admin)
    [row] = listing["secrets"]
    assert row["name"] == "hf" and row["bytes"] == len(value) and row["set_by"] and row["updated"], row

    for tenant, wanted, field in [("product/ads", {"HF_TOKEN": "hf"}, "env_from_secret.HF_TOKEN"),
                                  ("research/nlp", {"ADS": "ads"}, "env_from_secret.ADS"),
                                  ("research/nlp", {"X": "nope"}, "env_from_secret.X")]:
        status, out = d.call("POST", "/v1/jobs", job_body(tenant, wanted))
        assert status == 400 and out["error"]["field"] == field, (tenant, wanted, out)
    status, out = d.call("POST", "/v1/jobs", dict(job_body("research/nlp", {"HF_TOKEN": "hf"}),
                                                  env={"HF_TOKEN": "plain"}))
    assert status == 400 and out["error"]["field"] == "env_from_secret.HF_TOKEN", out

    a = Agent(d, write_node_file(d.dir, sim_nodes("sec", 1)), extra=["--no-cgroups"]).start()
    job_id = None
    try:
        a.wait_up(["sec-0"])
        job_id = d.ok("POST", "/v1/jobs", job_body("research/nlp", {"HF_TOKEN": "hf"}))["id"]
        wait_state(d, job_id, "running")
        got = os.path.join(a.checkpoint_dir(job_id), "got")
        gpd.wait_for(lambda: os.path.exists(got), what="the replica wrote its secret")
        with open(got) as f:
            assert f.read() == value
        with open(os.path.join(a.state_dir, "sec-0", "credential")) as f:
            node = f.read().strip()
        [entry] = [e for e in d.ok("GET", "/v1/agents/sec-0/assignments", token=node)["assignments"]
                   if e["job"] == job_id]
        assert entry["action"] == "run" and entry["secrets"] == {"HF_TOKEN": value}, entry
        assert "env_from_secret" not in entry

        views = [d.ok("GET", "/v1/jobs/%d" % job_id), d.ok("GET", "/v1/jobs?tenant=research"),
                 d.ok("GET", "/v1/jobs", token=member), listing]
        for view in views:
            assert value not in json.dumps(view), view
        assert d.ok("GET", "/v1/jobs/%d" % job_id)["env_from_secret"] == {"HF_TOKEN": "hf"}
        d.ok("DELETE", "/v1/jobs/%d" % job_id)
        wait_state(d, job_id, "cancelled")
    finally:
        a.stop()
        end_replicas([a], [])
    assert value not in a.read_log(tail=None)  # nor the agent's log

    assert set_secret(d, research_admin, "research", "hf", "rotated").returncode == 0
    p = d.cli("secret", "rm", "research", "hf", token=research_admin)
    assert "deleted" in p.stdout, p.stdout
    assert d.ok("GET", "/v1/secrets?tenant=research")["secrets"] == []
    assert d.call("DELETE", "/v1/secrets/hf?tenant=research")[0] == 404
    audit = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    rows = [(r["action"], r["target"], r["result"]) for r in audit if r["action"].startswith("secret.")]
    assert ("secret.set", "secret/research/hf", "ok") in rows and ("secret.delete", "secret/research/hf", "ok") \
        in rows, rows
    assert value not in json.dumps(audit)
    assert value.encode() not in gpd.store_bytes(d)
    assert value not in d.read_log(tail=None)
    key = os.path.join(d.dir, "secret.key")
    assert os.stat(key).st_mode & 0o777 == 0o600 and os.path.getsize(key) == 32


def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(d):
    d.ok("PUT", "/v1/tenants/t", {})
    for path, body, field in [
            ("/v1/secrets/k", {"value": "v"}, "tenant"),
            ("/v1/secrets/k?tenant=t", {"value": 7}, "value"),
            ("/v1/secrets/k?tenant=t", {}, "value"),
            ("/v1/secrets/k?tenant=t", {"value": "v", "owner": "x"}, "owner"),
            ("/v1/secrets/k?tenant=t", {"value": "v" * 65537}, "value"),
            ("/v1/secrets/k?tenant=t&x=1", {"value": "v"}, "x"),
            ("/v1/secrets/k?tenant=t/../x", {"value": "v"}, "tenant"),
            ("/v1/secrets/%s?tenant=t" % ("n" * 129), {"value": "v"}, "name")]:
        status, out = d.call("PUT", path, body)
        assert status == 400 and out["error"]["field"] == field, (path, out)
    status, out = d.call("PUT", "/v1/secrets/k?tenant=t/none", {"value": "v"})
    assert status == 404 and out["error"]["field"] == "tenant", out
    status, out = d.call("GET", "/v1/secrets?tenant=t/none")
    assert status == 404 and out["error"]["field"] == "tenant", out
    for wanted, field in [({"1X": "k"}, "env_from_secret"), ({"X": "bad name"}, "env_from_secret.X"),
                          ({"X": 3}, "env_from_secret.X"), ("k", "env_from_secret")]:
        status, out = d.call("POST", "/v1/jobs", {"tenant": "t", "env_from_secret": wanted})
        assert status == 400 and out["error"]["field"] == field, (wanted, out)
    assert d.ok("GET", "/v1/secrets?tenant=t")["secrets"] == []
    assert d.ok("GET", "/v1/jobs")["jobs"] == []


def test_a_key_file_others_may_read_stops_the_start(d):
    d.stop()
    os.chmod(os.path.join(d.dir, "secret.key"), 0o644)
    try:
        d.start()
    except RuntimeError as e:
        assert "chmod 600" in str(e), e
    else:
        raise AssertionError("gpupoold started with a key file others may read")


if __name__ == "__main__":
    gpd.run([
        test_a_secret_reaches_its_replica_and_nothing_else,
        test_bad_input_is_a_400_naming_the_field_and_changes_nothing,
        test_a_key_file_others_may_read_stops_the_start,
    ], fleet=None)
