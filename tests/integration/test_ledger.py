#!/usr/bin/env python3
"""The usage ledger (docs/metering.md): a record per usage interval opened
or closed, written with the decision, hash-chained; GET /v1/ledger/verify
and `gpupool ledger verify` name the first bad record after an edit, a
deletion or a reordering of a stopped daemon's SQLite file."""
import hashlib
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def run_and_cancel(d):
    """A 2-GPU job of alice, cancelled with no grace: its open and close records."""
    d.cli("apply", "-f", gpd.TENANTS)
    whole = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "user": "alice", "gpus": 2, "gpu_types": ["H100"],
                                      "checkpoint_grace_s": 0})
    assert whole["state"] == "running", whole
    d.ok("DELETE", "/v1/jobs/%d" % whole["id"])
    gpd.wait_for(lambda: len(d.ok("GET", "/v1/ledger")["records"]) == 2, what="the close record")
    return whole


def db(d):
    return sqlite3.connect(os.path.join(d.dir, "gpupool.db"))


def test_records_are_written_and_chained(d):
    whole = run_and_cancel(d)
    page = d.ok("GET", "/v1/ledger")
    opened, closed = [r["record"] for r in page["records"]]
    assert opened["kind"] == "open" and opened["job"] == whole["id"], opened
    assert opened["tenant"] == "research/nlp" and opened["user"] == "alice" and opened["gpu_type"] == "H100"
    assert opened["milli_gpus"] == 2000 and opened["share"] == "whole" and opened["class"] == "guaranteed"
    assert opened["placement"] == whole["placement"], (opened, whole)
    assert opened["seq"] == 1 and opened["prev"] == "0" * 64
    assert closed["kind"] == "close" and closed["closed"] == "cancelled" and closed["open_seq"] == 1, closed
    assert closed["interval"] == opened["interval"] and closed["start"] == opened["start"]
    assert closed["end"] >= closed["start"] and closed["placement"] == opened["placement"]
    # the chain: each hash is SHA-256 of the canonical text, each prev the hash before
    with db(d) as c:
        rows = c.execute("SELECT seq, record, hash FROM ledger ORDER BY seq").fetchall()
    prev = "0" * 64
    for seq, text, h in rows:
        rec = json.loads(text)
        assert text == json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert rec["prev"] == prev and hashlib.sha256(text.encode()).hexdigest() == h
        prev = h
    v = d.ok("GET", "/v1/ledger/verify")
    assert v == {"ok": True, "records": 2, "head": {"seq": 2, "hash": prev}}, v
    out = d.cli("ledger", "verify").stdout
    assert "2 records verified" in out and prev in out, out
    lines = d.cli("ledger", "--after", "1").stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["kind"] == "close", lines
    assert "event=ledger_head" in d.read_log(None)


def tamper(d, sql, first_bad, why):
    run_and_cancel(d)
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["H100"]})
    gpd.wait_for(lambda: len(d.ok("GET", "/v1/ledger")["records"]) == 3, what="a third record")
    d.stop()
    with db(d) as c:
        for stmt in sql:
            c.execute(stmt)
    d.start()
    v = d.ok("GET", "/v1/ledger/verify")
    assert v["ok"] is False and v["first_bad"] == first_bad and why in v["why"], v
    p = d.cli("ledger", "verify", check=False)
    assert p.returncode == 1 and ("record %d" % first_bad) in p.stderr, (p.returncode, p.stderr)
    assert "event=ledger_verify ok=false first_bad=%d" % first_bad in d.read_log(None)


def test_an_edit_is_detected(d):
    tamper(d, ["UPDATE ledger SET record = replace(record, '\"milli_gpus\":2000', '\"milli_gpus\":1000')"
               " WHERE seq = 2"], 2, "edited")


def test_a_deletion_is_detected(d):
    tamper(d, ["DELETE FROM ledger WHERE seq = 2"], 2, "missing")


def test_a_reordering_is_detected(d):
    tamper(d, ["UPDATE ledger SET seq = -1 WHERE seq = 2", "UPDATE ledger SET seq = 2 WHERE seq = 3",
               "UPDATE ledger SET seq = 3 WHERE seq = -1"], 2, "reordered")


def test_readers_other_than_admin_and_auditor_are_refused(d):
    d.cli("apply", "-f", gpd.TENANTS)
    tok = d.ok("POST", "/v1/tokens", {"name": "op", "role": "operator"})["token"]
    st, err = d.call("GET", "/v1/ledger/verify", token=tok)
    assert st == 403, (st, err)
    st, err = d.call("GET", "/v1/ledger?limit=0")
    assert st == 400 and err["error"]["field"] == "limit", (st, err)


if __name__ == "__main__":
    gpd.run([test_records_are_written_and_chained, test_an_edit_is_detected, test_a_deletion_is_detected,
             test_a_reordering_is_detected, test_readers_other_than_admin_and_auditor_are_refused])
