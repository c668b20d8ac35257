#!/usr/bin/env python3
"""The usage ledger (docs/metering.md): a record per usage interval opened
or closed (and per capacity and guarantee change), written with the
decision, hash-chained; GET /v1/ledger/verify
and `gpupool ledger verify` name the first bad record after an edit, a
deletion or a reordering of a stopped daemon's SQLite file."""
import hashlib
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402


def usage_records(d):
    """The open and close records (the fleet's capacity and the tenants' guarantee records come first)."""
    return [r["record"] for r in d.ok("GET", "/v1/ledger")["records"] if r["record"]["kind"] in ("open", "close")]


def run_and_cancel(d):
    """A 2-GPU job of alice, cancelled with no grace: its open and close records."""
    d.cli("apply", "-f", gpd.TENANTS)
    whole = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "user": "alice", "gpus": 2, "gpu_types": ["H100"],
                                      "checkpoint_grace_s": 0})
    assert whole["state"] == "running", whole
    d.ok("DELETE", "/v1/jobs/%d" % whole["id"])
    gpd.wait_for(lambda: len(usage_records(d)) == 2, what="the close record")
    return whole


def db(d):
    return sqlite3.connect(os.path.join(d.dir, "gpupool.db"))


def test_records_are_written_and_chained(d):
    whole = run_and_cancel(d)
    page = d.ok("GET", "/v1/ledger")
    first = page["records"][0]["record"]
    assert first["kind"] == "capacity" and first["seq"] == 1 and first["prev"] == "0" * 64, first
    assert any(r["record"]["kind"] == "guarantee" and r["record"]["tenant"] == "research/nlp"
               for r in page["records"]), page
    opened, closed = usage_records(d)
    assert opened["kind"] == "open" and opened["job"] == whole["id"], opened
    assert opened["tenant"] == "research/nlp" and opened["user"] == "alice" and opened["gpu_type"] == "H100"
    assert opened["milli_gpus"] == 2000 and opened["share"] == "whole" and opened["class"] == "guaranteed"
    assert opened["placement"] == whole["placement"], (opened, whole)
    assert closed["kind"] == "close" and closed["closed"] == "cancelled" and closed["open_seq"] == opened["seq"]
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
    n = len(rows)
    v = d.ok("GET", "/v1/ledger/verify")
    assert v == {"ok": True, "records": n, "head": {"seq": n, "hash": prev}}, v
    out = d.cli("ledger", "verify").stdout
    assert "%d records verified" % n in out and prev in out, out
    lines = d.cli("ledger", "--after", str(n - 1)).stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["kind"] == "close", lines
    assert "event=ledger_head" in d.read_log(None)


def tamper(d, sql, why):
    """sql(S) changes the stopped daemon's ledger around S, the seq of the
    close record; verify must name S."""
    run_and_cancel(d)
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1, "gpu_types": ["H100"]})
    gpd.wait_for(lambda: len(usage_records(d)) == 3, what="a third usage record")
    first_bad = usage_records(d)[1]["seq"]
    d.stop()
    with db(d) as c:
        for stmt in sql(first_bad):
            c.execute(stmt)
    d.start()
    v = d.ok("GET", "/v1/ledger/verify")
    assert v["ok"] is False and v["first_bad"] == first_bad and why in v["why"], v
    p = d.cli("ledger", "verify", check=False)
    assert p.returncode == 1 and ("record %d" % first_bad) in p.stderr, (p.returncode, p.stderr)
    assert "event=ledger_verify ok=false first_bad=%d" % first_bad in d.read_log(None)


def test_an_edit_is_detected(d):
    tamper(d, lambda s: ["UPDATE ledger SET record = replace(record, '\"milli_gpus\":2000', '\"milli_gpus\":1000')"
                         " WHERE seq = %d" % s], "edited")


def test_a_deletion_is_detected(d):
    tamper(d, lambda s: ["DELETE FROM ledger WHERE seq = %d" % s], "missing")


def test_a_reordering_is_detected(d):
    tamper(d, lambda s: ["UPDATE ledger SET seq = -1 WHERE seq = %d" % s,
                         "UPDATE ledger SET seq = %d WHERE seq = %d" % (s, s + 1),
                         "UPDATE ledger SET seq = %d WHERE seq = -1" % (s + 1)], "reordered")


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
