#!/usr/bin/env python3
"""Crash test: concurrent clients submit (and cancel) jobs while kill -9
hits gpupoold at random moments; the daemon is restarted each time.

Afterwards: every acknowledged submit is there exactly once (each request
carries a unique name; no name appears twice), every acknowledged cancel
is cancelled, no GPU is held by two live jobs, the restart's own replay
check passed, and the audit chain and the usage ledger verify.

GP_CRASH_ROUNDS (default 8) and GP_CRASH_CLIENTS (default 4) size it.
"""
import json
import os
import random
import sqlite3
import sys
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

ROUNDS = int(os.environ.get("GP_CRASH_ROUNDS", "8"))
CLIENTS = int(os.environ.get("GP_CRASH_CLIENTS", "4"))
TENANTS = ["research/nlp", "research/vision", "product/search", "product/ads"]


class Client(threading.Thread):
    def __init__(self, d, k, stop):
        super().__init__(daemon=True)
        self.d, self.k, self.stop = d, k, stop
        self.acked = {}       # job id -> name
        self.cancelled = set()
        self.sent = 0
        self.rng = random.Random(k)

    def run(self):
        seq = 0
        while not self.stop.is_set():
            seq += 1
            name = "c%d-%d" % (self.k, seq)
            body = {"tenant": self.rng.choice(TENANTS), "name": name, "gpus": self.rng.choice([1, 1, 2, 4, 8]),
                    "checkpoint_grace_s": self.rng.choice([0, 1, 2])}
            try:
                self.sent += 1
                st, out = self.d.call("POST", "/v1/jobs", body)
                if st == 201:
                    self.acked[out["id"]] = name
                if self.acked and self.rng.random() < 0.1:
                    victim = self.rng.choice(list(self.acked))
                    st, out = self.d.call("DELETE", "/v1/jobs/%d" % victim)
                    if st == 202:
                        self.cancelled.add(victim)
            except (OSError, urllib.error.URLError, ValueError, TypeError):
                time.sleep(0.05)  # the daemon is down or restarting


def check(d, clients):
    jobs, before = [], None
    while True:
        path = "/v1/jobs?limit=1000" + ("&before=%d" % before if before else "")
        page = d.ok("GET", path)
        jobs += page["jobs"]
        if page["next"] is None:
            break
        before = page["next"]
    by_id = {j["id"]: j for j in jobs}
    names = [j["name"] for j in jobs]
    assert len(names) == len(set(names)), "a submit was applied twice"
    acked = 0
    for c in clients:
        for jid, name in c.acked.items():
            assert jid in by_id, "acknowledged job %d lost" % jid
            assert by_id[jid]["name"] == name, (jid, name, by_id[jid]["name"])
            acked += 1
        for jid in c.cancelled:
            assert by_id[jid]["state"] in ("cancelled", "preempting"), by_id[jid]
    owner = {}
    for j in jobs:
        if j["state"] in ("admitted", "running", "preempting"):
            for p in j["placement"]:
                for g in p["gpus"]:
                    assert g not in owner, "GPU %s held by jobs %d and %d" % (g, owner[g], j["id"])
                    owner[g] = j["id"]
    v = d.ok("GET", "/v1/audit/verify")
    assert v["ok"], v
    v = d.ok("GET", "/v1/ledger/verify")  # no acknowledged record lost, none half-written
    assert v["ok"], v
    return acked, len(jobs), len(owner)


def test_kill9_under_load(d):
    d.cli("apply", "-f", gpd.TENANTS)
    stop = threading.Event()
    clients = [Client(d, k, stop) for k in range(CLIENTS)]
    for c in clients:
        c.start()
    rng = random.Random(42)
    for r in range(ROUNDS):
        time.sleep(rng.uniform(0.3, 1.5))
        d.kill9()
        d.start()
    time.sleep(0.5)
    stop.set()
    for c in clients:
        c.join(timeout=30)
    d.kill9()
    d.start()  # the start itself replays and checks the store against the log
    acked, total, gpus = check(d, clients)
    print("     %d rounds, %d requests sent, %d acknowledged, %d jobs stored, %d GPUs held" %
          (ROUNDS, sum(c.sent for c in clients), acked, total, gpus))
    assert acked > 0


def test_old_log_with_trusted_child_below_untrusted_parent_replays(d):
    """A log written before trust became a floor can hold an explicit
    "trusted" child below an untrusted parent.  The restart must still
    replay it, reading the child as inherit (untrusted)."""
    d.ok("PUT", "/v1/tenants/legacy", {"trust": "untrusted", "guarantee": {"gpu": {"H100": 1}}})
    d.ok("PUT", "/v1/tenants/legacy/child", {})
    d.kill9()
    db = sqlite3.connect(os.path.join(d.dir, "gpupool.db"))
    rows = db.execute("SELECT seq, payload FROM events WHERE kind = 'tenant_set'").fetchall()
    edited = 0
    for seq, payload in rows:
        event = json.loads(payload)
        if event["path"] == "legacy/child":
            event["spec"]["trust"] = "trusted"  # what the old daemon accepted
            db.execute("UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(event), seq))
            edited += 1
    db.commit()
    db.close()
    assert edited == 1, rows
    d.start()
    tenants = d.ok("GET", "/v1/tenants")
    child = [t for t in tenants["tenants"] if t["path"] == "legacy/child"]
    assert child and child[0]["trust"] == "untrusted", tenants
    assert "replay_trust_floor" in d.read_log()


def test_clock_resolution_is_logged_once_and_old_logs_replay_without_it(d):
    """gpupoold logs its 1 s clock resolution as an event the first time;
    a log written before that event existed (none in it) still replays,
    and later restarts do not log it again."""
    d.ok("PUT", "/v1/tenants/org", {"guarantee": {"gpu": {"H100": 1}}})
    d.kill9()
    db_path = os.path.join(d.dir, "gpupool.db")
    db = sqlite3.connect(db_path)
    assert db.execute("SELECT count(*) FROM events WHERE kind = 'clock_resolution'").fetchone()[0] == 1
    db.execute("DELETE FROM events WHERE kind = 'clock_resolution'")  # what an older daemon wrote
    db.commit()
    db.close()
    d.start()
    d.kill9()
    d.start()
    db = sqlite3.connect(db_path)
    rows = db.execute("SELECT payload FROM events WHERE kind = 'clock_resolution'").fetchall()
    db.close()
    assert [json.loads(r[0]) for r in rows] == [{"seconds": 1}], rows


if __name__ == "__main__":
    gpd.run([test_kill9_under_load, test_old_log_with_trusted_child_below_untrusted_parent_replays,
             test_clock_resolution_is_logged_once_and_old_logs_replay_without_it])
