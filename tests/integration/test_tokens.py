#!/usr/bin/env python3
"""Tokens that fit how teams work (issue 12, section 3), against a real gpupoold.

  - a member token carries its tenant and its user: `submit` without
    --tenant lands in the token's tenant and runs as its user (per-user
    limits hold it); `jobs` and `usage` default to that tenant; a member
    token without --user is refused (docs/api.md);
  - tokens expire (--ttl, h/m/s/d/w): an expired one gets 401 saying when,
    and where to set another; `token list` shows expiry and last use;
  - a member asking for the usage of an ancestor whose limit holds its job
    gets a 403 that says why, never a 404;
  - a missing token, a server that is not gpupool, a config line the CLI
    cannot read: each is said plainly;
  - a version-1 store (no expiry, no last use) migrates on start;
  - `gpupool --version` and `gpupoold --version` name the git commit.
"""
import http.server
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

# ml holds at most 2 H100 in all; each user of ml/train at most 1.
ML = """tenants:
  - path: ml
    limit: {gpu: {H100: 2}}
  - path: ml/train
    user_limit: {gpu: {H100: 1}}
"""


def write(d, name, text):
    path = os.path.join(d.dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def setup_ml(d):
    d.cli("apply", "-f", write(d, "ml.yaml", ML))


def member(d, user="alice", scope="ml/train", ttl=None):
    args = ["token", "create", "--name", user, "--role", "member", "--scope", scope, "--user", user]
    out = d.cli(*(args + (["--ttl", ttl] if ttl else [])), json_out=True)
    return out["token"], out


def bare_cli(d, *args, env=None):
    """gpupool with only the environment given (HOME = the test's directory)."""
    cmd = [os.path.join(gpd.BIN, "gpupool")] + list(args)
    full = dict(os.environ, HOME=d.dir)
    for key in ("GPUPOOL_SERVER", "GPUPOOL_TOKEN", "GPUPOOL_TOKEN_FILE", "XDG_CONFIG_HOME"):
        full.pop(key, None)
    full.update(env or {})
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=60)


def test_member_submits_without_tenant_into_its_tenant_as_its_user(d):
    setup_ml(d)
    tok, _ = member(d)
    first = d.cli("submit", "--gpus", "1", "--gpu-type", "H100", token=tok, json_out=True)
    assert first["tenant"] == "ml/train" and first["user"] == "alice", first
    assert first["state"] == "running", first
    # the API itself defaults it (not only the CLI)
    second = d.ok("POST", "/v1/jobs", {"gpus": 1, "gpu_types": ["H100"]}, token=tok)
    assert second["tenant"] == "ml/train" and second["user"] == "alice", second
    # alice's per-user limit (1 H100) holds her second job
    assert second["state"] == "pending" and "per-user limit" in second["reason"], second
    # a token that is not a member's names the tenant
    p = d.cli("submit", "--gpus", "1", check=False)
    assert p.returncode == 6 and "tenant" in p.stderr, (p.returncode, p.stderr)


def test_jobs_and_usage_default_to_the_members_tenant(d):
    d.cli("apply", "-f", gpd.TENANTS)
    tok, _ = member(d, scope="research/nlp")
    mine = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})["id"]
    theirs = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 1})["id"]
    gpd.wait_for(lambda: all(j["state"] == "running" for j in d.ok("GET", "/v1/jobs")["jobs"]), what="running")
    listed = d.cli("jobs", token=tok, json_out=True)["jobs"]
    assert [j["id"] for j in listed] == [mine], listed
    assert theirs in [j["id"] for j in d.ok("GET", "/v1/jobs")["jobs"]]
    rows = gpd.wait_for(lambda: d.cli("usage", token=tok, json_out=True)["usage"], what="usage rows")
    assert {r["tenant"] for r in rows} == {"research/nlp"}, rows
    gpd.wait_for(lambda: {r["tenant"] for r in d.ok("GET", "/v1/usage")["usage"]} >= {"research/nlp", "research/vision"},
                 what="the admin's usage of both tenants")  # rows come as the engine meters, not at once


def test_member_token_without_user_is_refused(d):
    setup_ml(d)
    p = d.cli("token", "create", "--name", "x", "--role", "member", "--scope", "ml/train", check=False)
    assert p.returncode == 6, (p.returncode, p.stderr)
    assert "(field user)" in p.stderr and "--user" in p.stderr, p.stderr
    assert not [t for t in d.ok("GET", "/v1/tokens")["tokens"] if t["name"] == "x"]
    # the other roles carry no user
    d.cli("token", "create", "--name", "ops", "--role", "operator")


def test_expired_token_is_refused_saying_when_and_how_to_set_another(d):
    setup_ml(d)
    tok, out = member(d, ttl="1s")
    assert out["expires"] is not None
    time.sleep(2.1)  # the token's life is 1 s: past it for sure
    st, err = d.call("GET", "/v1/jobs", token=tok)
    assert st == 401, (st, err)
    msg = err["error"]["message"]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(out["expires"]))
    assert "expired at " + when in msg and "GPUPOOL_TOKEN" in msg, msg
    p = d.cli("jobs", token=tok, check=False)
    assert p.returncode == 4 and "expired at" in p.stderr and "came from GPUPOOL_TOKEN" in p.stderr, p.stderr
    # bad --ttl values are refused before any request
    for bad in ("30", "1y", "-1d", "abc"):
        p = d.cli("token", "create", "--name", "y", "--role", "member", "--scope", "ml/train", "--user", "y",
                  "--ttl", bad, check=False)
        assert p.returncode == 2 and "--ttl" in p.stderr, (bad, p.stderr)


def test_token_list_shows_expiry_and_last_use(d):
    setup_ml(d)
    tok, out = member(d, ttl="30d")
    default_tok, default_out = member(d, user="bob")
    rows = {t["name"]: t for t in d.cli("token", "list", json_out=True)["tokens"]}
    assert rows["alice"]["expires"] - rows["alice"]["created"] == 30 * 86400, rows["alice"]
    assert rows["bob"]["expires"] - rows["bob"]["created"] == 90 * 86400, rows["bob"]  # the member default
    assert rows["bootstrap"]["expires"] is None, rows["bootstrap"]
    assert rows["alice"]["last_used"] is None, rows["alice"]
    d.ok("GET", "/v1/jobs", token=tok)
    rows = {t["name"]: t for t in d.cli("token", "list", json_out=True)["tokens"]}
    assert rows["alice"]["last_used"] is not None and rows["bob"]["last_used"] is None, rows
    table = d.cli("token", "list").stdout
    assert "EXPIRES" in table and "LAST USED" in table, table
    alice = [line for line in table.splitlines() if " alice " in line][0]
    assert re.search(r"\(in (29|30)d\)", alice) and re.search(r"\((just now|\d+s ago)\)", alice), alice
    assert "never" in [line for line in table.splitlines() if "bootstrap" in line][0], table
    # the use reaches the store (at most once a minute per token) and survives a restart
    db = os.path.join(d.dir, "gpupool.db")

    def stored():
        with sqlite3.connect(db) as c:
            return c.execute("SELECT last_used FROM tokens WHERE name = 'alice'").fetchone()[0]
    gpd.wait_for(stored, what="last use stored")
    d.stop()
    d.start()
    rows = {t["name"]: t for t in d.cli("token", "list", json_out=True)["tokens"]}
    assert rows["alice"]["last_used"] == stored(), rows["alice"]


def test_version_1_store_migrates(d):
    setup_ml(d)
    tok, _ = member(d)
    d.stop()
    db = os.path.join(d.dir, "gpupool.db")
    with sqlite3.connect(db) as c:  # back to schema 1: no expiry, no last use, no decision records
        c.execute("ALTER TABLE tokens DROP COLUMN expires")
        c.execute("ALTER TABLE tokens DROP COLUMN last_used")
        c.execute("ALTER TABLE tokens DROP COLUMN single_use")  # schema 10
        for table in ("node_approvals", "secrets"):  # schema 10
            c.execute("DROP TABLE " + table)
        for column in ("version", "decisions", "digest"):
            c.execute("ALTER TABLE events DROP COLUMN " + column)
        c.execute("DROP TABLE job_runs")  # schema 3
        for table in ("gpu_checks", "gpu_health", "health_drains"):  # schema 4
            c.execute("DROP TABLE " + table)
        c.execute("DROP TABLE ledger")  # schema 5
        c.execute("DROP TABLE job_use")  # schema 6
        for table in ("prices", "bill_modes", "snapshots", "snapshot_parts", "leader_lease"):  # schemas 7, 8, 9
            c.execute("DROP TABLE " + table)
        c.execute("DROP TABLE user_tenants")  # schema 10
        c.execute("DROP TABLE gpu_types")  # schema 11
        c.execute("DROP TABLE node_drains")  # schema 12
        c.execute("DROP TABLE node_ca")  # schema 13
        c.execute("DROP INDEX jobs_by_array")  # schema 14
        for column in ("array_id", "array_index"):  # schema 14
            c.execute("ALTER TABLE jobs DROP COLUMN " + column)
        c.execute("DROP TABLE rolebindings")  # schema 15
        c.execute("DROP INDEX usage_open")  # schema 7
        c.execute("PRAGMA user_version = 1")
    d.start()
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 15
    assert d.ok("GET", "/v1/jobs", token=tok)["jobs"] == []
    rows = {t["name"]: t for t in d.ok("GET", "/v1/tokens")["tokens"]}
    assert rows["alice"]["expires"] is None and rows["alice"]["user"] == "alice", rows["alice"]


def test_usage_of_an_ancestor_that_holds_the_job_is_403_with_why(d):
    setup_ml(d)
    alice, _ = member(d)
    bob, _ = member(d, user="bob")
    d.ok("POST", "/v1/jobs", {"gpus": 1, "gpu_types": ["H100"]}, token=alice)
    d.ok("POST", "/v1/jobs", {"gpus": 1, "gpu_types": ["H100"]}, token=bob)
    held = d.ok("POST", "/v1/jobs", {"tenant": "ml/train", "gpus": 1, "gpu_types": ["H100"], "user": "carol"})
    assert held["state"] == "pending" and "limit of ml" in held["reason"], held
    st, err = d.call("GET", "/v1/usage?tenant=ml", token=alice)
    assert st == 403 and "above this token's scope ml/train" in err["error"]["message"], (st, err)
    p = d.cli("usage", "--tenant", "ml", token=alice, check=False)
    assert p.returncode == 4 and "its limits hold the jobs of ml/train" in p.stderr, p.stderr
    # a tenant outside the scope that is no ancestor still does not exist for it
    d.cli("apply", "-f", gpd.TENANTS)
    st, err = d.call("GET", "/v1/usage?tenant=research", token=alice)
    assert st == 404, (st, err)


def test_missing_or_bad_token_says_how_to_set_one(d):
    st, err = d.call("GET", "/v1/jobs", token="")
    assert st == 401 and "GPUPOOL_TOKEN" in err["error"]["message"], err
    assert "--token-file" in err["error"]["message"], err
    p = bare_cli(d, "jobs", env={"GPUPOOL_SERVER": d.url})
    assert p.returncode == 4, (p.returncode, p.stderr)
    assert "no token is set: sign in with gpupool login, or export GPUPOOL_TOKEN" in p.stderr and "--token-file" in p.stderr, p.stderr
    p = bare_cli(d, "jobs", env={"GPUPOOL_SERVER": d.url, "GPUPOOL_TOKEN": "gpt_" + "0" * 64})
    assert p.returncode == 4 and "unknown or revoked" in p.stderr and "came from GPUPOOL_TOKEN" in p.stderr, p.stderr


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_a_server_that_is_not_gpupool_is_named(d):
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: Quiet(*a, directory=d.dir))
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d" % other.server_address[1]
        p = bare_cli(d, "--server", url, "jobs", env={"GPUPOOL_TOKEN": d.token})
    finally:
        other.shutdown()
        other.server_close()
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert url + " does not look like a gpupool server (HTTP 404" in p.stderr, p.stderr


def test_a_config_line_the_cli_cannot_read_is_an_error(d):
    config = write(d, ".config/gpupool/config", "# mine\nserver = %s\n\ntoken %s\n" % (d.url, d.token))
    p = bare_cli(d, "jobs")
    assert p.returncode == 2 and config + ":4: cannot parse" in p.stderr, (p.returncode, p.stderr)
    write(d, ".config/gpupool/config", "server = %s\ntokn = %s\n" % (d.url, d.token))
    p = bare_cli(d, "jobs")
    assert p.returncode == 2 and config + ':2: unknown key "tokn"' in p.stderr, (p.returncode, p.stderr)
    write(d, ".config/gpupool/config", "  # indented comment\nserver = %s\ntoken = %s\n" % (d.url, d.token))
    p = bare_cli(d, "jobs")
    assert p.returncode == 0, (p.returncode, p.stderr)


def test_version_names_the_commit(d):
    pattern = re.compile(r"^%s \d+\.\d+\.\d+ \(commit ([0-9a-z.-]+)\)$")
    for binary in ("gpupool", "gpupoold"):
        p = subprocess.run([os.path.join(gpd.BIN, binary), "--version"], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, (binary, p.stderr)
        m = re.match(pattern.pattern % binary, p.stdout.strip())
        assert m, (binary, p.stdout)
        commit = m.group(1)
        assert commit == "unknown" or re.match(r"^(.*-g)?[0-9a-f]{7,}(-dirty)?$", commit), commit


if __name__ == "__main__":
    gpd.run([test_member_submits_without_tenant_into_its_tenant_as_its_user,
             test_jobs_and_usage_default_to_the_members_tenant,
             test_member_token_without_user_is_refused,
             test_expired_token_is_refused_saying_when_and_how_to_set_another,
             test_token_list_shows_expiry_and_last_use,
             test_version_1_store_migrates,
             test_usage_of_an_ancestor_that_holds_the_job_is_403_with_why,
             test_missing_or_bad_token_says_how_to_set_one,
             test_a_server_that_is_not_gpupool_is_named,
             test_a_config_line_the_cli_cannot_read_is_an_error,
             test_version_names_the_commit])
