#!/usr/bin/env python3
"""Replay anywhere: a real daemon's event log re-run offline, decision by
decision (gpupool-replay), from the store and from an export; an altered
event is found; a store written before the event-log codec still loads.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
import test_lifecycle  # noqa: E402

FIXTURES = os.path.join(gpd.ROOT, "tests", "fixtures")


def replay(path):
    p = subprocess.run([os.path.join(gpd.BIN, "gpupool-replay"), path], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr


def lifecycle(d):
    """The lifecycle scenario: tenants, jobs, a reclaim with preemptions, a
    cancel, a drain and undrain."""
    test_lifecycle.apply_tenants(d)
    own = d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 8, "gpu_types": ["H100"]})
    for i in range(4):
        d.ok("POST", "/v1/jobs", {"tenant": "research/vision", "gpus": 4, "gpu_types": ["H100"],
                                  "checkpoint_grace_s": 1, "name": "v-%d" % i})
    d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 8, "gpu_types": ["H100"]})
    gang = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "replicas": 2, "gpus": 8, "gpu_types": ["H100"]})
    gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % gang["id"])["state"] == "running", timeout=15, what="gang")
    d.ok("DELETE", "/v1/jobs/%d" % own["id"], expect=(202,))
    d.ok("POST", "/v1/nodes/l40s-d-0/drain", {"drain": True})
    d.ok("POST", "/v1/nodes/l40s-d-0/drain", {"drain": False})
    d.ok("PUT", "/v1/tenants/research/vision", {"guarantee": {"gpu": {"H100": 4}}, "weight": 0.1})


def test_a_daemon_log_replays_equal_offline_and_from_an_export(d):
    lifecycle(d)
    out = os.path.join(d.dir, "events.jsonl")
    p = d.cli("admin", "export-log", "--out", out)
    assert "exported" in p.stdout, p.stdout
    with open(out) as f:
        lines = f.read().splitlines()
    assert json.loads(lines[0]) == {"format": "gpupool-event-log", "version": 1}, lines[0]
    kinds = {json.loads(line)["kind"] for line in lines[1:]}
    assert {"submit", "tick", "cancel", "tenant_set", "node_drain", "node_add"} <= kinds, kinds
    d.stop()
    db = os.path.join(d.dir, "gpupool.db")
    rc, text = replay(db)
    assert rc == 0 and "all equal" in text and " 0 not compared" in text, text
    rc, text = replay(out)
    assert rc == 0 and "all equal" in text, text
    d.start()


def first_bound_submit(con):
    """The seq of the submit of a job that was bound, and its job id."""
    for seq, payload in con.execute("SELECT seq, payload FROM events WHERE kind = 'submit' ORDER BY seq"):
        job = json.loads(payload)
        state = con.execute("SELECT state FROM jobs WHERE id = ?", (job["id"],)).fetchone()[0]
        if state == "running" and job["gpus"] == 8:
            return seq, job
    raise AssertionError("no running 8-GPU job")


def test_an_altered_event_is_found(d):
    lifecycle(d)
    d.stop()
    db = os.path.join(d.dir, "gpupool.db")
    copy = os.path.join(d.dir, "altered.db")
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    seq, job = first_bound_submit(con)
    job["gpus"] = 4  # the job asked for 4 GPUs, not 8
    con.execute("UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(job, sort_keys=True), seq))
    con.commit()
    con.close()
    rc, text = replay(copy)
    assert rc == 1, (rc, text)
    first = [line for line in text.splitlines() if "decided differently" in line]
    assert first, text
    named = int(first[0].split("event ")[1].split(" ")[0])
    assert named >= seq, (seq, text)  # that event, or the first after it whose decisions differ
    assert "expected" in text and "got" in text and "replayed decisions:" in text, text
    # a tick's time moved (and the events after it, time never goes back):
    # its decisions carry their time, so that tick is named
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    tseq = con.execute("SELECT MAX(seq) FROM events WHERE kind = 'tick' AND decisions > 0").fetchone()[0]
    con.execute("UPDATE events SET time = time + 100000 WHERE seq >= ?", (tseq,))
    con.commit()
    con.close()
    rc, text = replay(copy)
    assert rc == 1 and "event %d (tick" % tseq in text, (tseq, text)
    # a payload that does not decode is bad input, naming the event and field
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    con.execute("UPDATE events SET payload = '{\"id\": \"seven\"}' WHERE kind = 'cancel'")
    con.commit()
    cseq = con.execute("SELECT seq FROM events WHERE kind = 'cancel'").fetchone()[0]
    con.close()
    rc, text = replay(copy)
    assert rc == 2 and "event %d (cancel" % cseq in text and "field id" in text, (rc, text)
    d.start()


def test_only_admin_and_auditor_read_the_log(d):
    test_lifecycle.apply_tenants(d)
    auditor = d.ok("POST", "/v1/tokens", {"name": "aud", "role": "auditor"})["token"]
    member = d.ok("POST", "/v1/tokens", {"name": "m", "role": "member", "scope": "research/nlp", "user": "m"})["token"]
    page = d.ok("GET", "/v1/log?limit=2", token=auditor)
    assert len(page["events"]) == 2 and page["next"] == page["events"][1]["seq"], page
    e = page["events"][0]
    assert set(e) == {"seq", "time", "kind", "version", "payload", "decisions", "digest"}, e
    rest = d.ok("GET", "/v1/log?after=%d&limit=1000" % page["next"], token=auditor)
    assert rest["next"] is None and rest["events"][0]["seq"] == page["next"] + 1, rest
    st, err = d.call("GET", "/v1/log", token=member)
    assert st == 403, (st, err)
    st, err = d.call("GET", "/v1/log?limit=0")
    assert st == 400 and err["error"]["field"] == "limit", (st, err)


def test_a_store_written_before_the_codec_still_loads(d):
    """tests/fixtures/store_v1.sql: written by gpupoold at f1442ef (schema 1,
    no decisions recorded).  The tool replays it as it is; gpupoold opens
    it (migrating it to the current schema) and its new events are compared."""
    import hashlib
    workdir = os.path.join(d.dir, "old")
    os.mkdir(workdir)
    db = os.path.join(workdir, "gpupool.db")
    con = sqlite3.connect(db)
    with open(os.path.join(FIXTURES, "store_v1.sql")) as f:
        con.executescript(f.read())
    con.close()
    os.chmod(db, 0o600)  # as gpupoold makes it (a store others may read is refused)
    rc, text = replay(db)
    assert rc == 0 and "(0 compared" in text and "final state: 10 live jobs" in text, text
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 1  # read, not migrated
    # an admin token of our own (the store has its tokens already)
    secret = "gpt_" + "ab" * 32
    with open(os.path.join(workdir, "admin.token"), "w") as f:
        f.write(secret + "\n")
    con = sqlite3.connect(db)
    con.execute("INSERT INTO tokens(id, hash, name, role, scope, user, created, created_by, revoked)"
                " VALUES('0123456789abcdef', ?, 'test', 'admin', '', '', 0, 'test', NULL)",
                (hashlib.sha256(secret.encode()).hexdigest(),))
    con.commit()
    con.close()
    old = gpd.Daemon(workdir=workdir, fleet=os.path.join(FIXTURES, "fleet_v1.yaml"))
    old.start()
    try:
        jobs = old.ok("GET", "/v1/jobs?limit=100")["jobs"]
        assert len(jobs) == 11 and {j["state"] for j in jobs} >= {"running", "pending", "cancelled"}, jobs
        assert old.ok("GET", "/v1/ledger/verify")["ok"]  # schema 5: a ledger from the migration on
    finally:
        old.stop()
    assert sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0] == 12
    rc, text = replay(db)
    assert rc == 0 and "all equal" in text and "39 not compared" in text, text


if __name__ == "__main__":
    gpd.run([test_a_daemon_log_replays_equal_offline_and_from_an_export, test_an_altered_event_is_found,
             test_only_admin_and_auditor_read_the_log, test_a_store_written_before_the_codec_still_loads])
