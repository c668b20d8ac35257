#!/usr/bin/env python3
"""Engine snapshots: gpupoold writes them every N events; after kill -9 a
restart loads the newest, replays only the log after it and loses
nothing; a big snapshot is not rewritten before one event per 128 bytes
of it; a corrupted newest snapshot is said in the log and the previous
one is used; with every snapshot corrupted the start replays the whole
log.  The store's log still replays equal offline (gpupool-replay does a
full replay, the independent check).
"""
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
import test_replay  # noqa: E402

EXTRA = ["--snapshot-every-events", "5", "--snapshot-every-s", "1"]


def db_path(d):
    return os.path.join(d.dir, "gpupool.db")


def snapshots(d):
    with sqlite3.connect(db_path(d)) as c:
        return [r[0] for r in c.execute("SELECT seq FROM snapshots WHERE complete = 1 ORDER BY seq DESC")]


def jobs_view(d):
    out = d.ok("GET", "/v1/jobs?limit=1000")
    return {j["id"]: (j["state"], json_placement(j)) for j in out["jobs"]}


def json_placement(j):
    return repr(j.get("placement"))


def busy_daemon(d):
    """The lifecycle scenario, then more submits until two snapshots exist."""
    test_replay.lifecycle(d)
    n = 0
    while len(snapshots(d)) < 2:
        d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1, "name": "more-%d" % n})
        n += 1
        gpd.wait_for(lambda: True, timeout=1)
        assert n < 200, "no snapshots written:\n" + d.read_log()


def restart(d, kill=True):
    """kill -9 (or stop) and start again; the new run's log."""
    before = len(d.read_log(tail=None))
    if kill:
        d.kill9()
    else:
        d.stop()
    d.start()
    return d.read_log(tail=None)[before:]


def replay_line(log):
    m = re.search(r"event=replay snapshot_seq=(\d+) events=(\d+)", log)
    assert m, log
    return int(m.group(1)), int(m.group(2))


def test_a_restart_after_kill_9_starts_from_the_newest_snapshot_and_loses_nothing(d):
    busy_daemon(d)
    # a tail after the newest snapshot, acknowledged
    tail = [d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 2, "name": "tail-%d" % i})["id"]
            for i in range(3)]
    want = jobs_view(d)
    newest = snapshots(d)[0]
    log = restart(d)
    seq, events = replay_line(log)
    assert seq >= newest > 0, (seq, newest, log)
    with sqlite3.connect(db_path(d)) as c:
        last = c.execute("SELECT max(seq) FROM events").fetchone()[0]
    assert events < last, (events, last)  # only the tail was replayed
    got = jobs_view(d)
    for i in tail:
        assert i in got, (i, got)
    for i, (state, placement) in want.items():  # every job there; a finished one as it ended
        assert i in got, (i, got)
        if state in ("succeeded", "failed", "cancelled"):
            assert got[i] == (state, placement), (i, state, got[i])
    held = [g for job in d.ok("GET", "/v1/jobs?limit=1000&state=live")["jobs"]
            for rep in (job.get("placement") or []) for g in rep.get("gpus", [])
            if job["state"] in ("admitted", "running", "preempting")]
    assert len(held) == len(set(held)), held  # no GPU held twice
    nxt = d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})["id"]
    assert nxt > max(want), (nxt, max(want))
    d.stop()
    rc, text = test_replay.replay(db_path(d))
    assert rc == 0 and "all equal" in text, text
    d.start()


def snapshot_rows(d):
    with sqlite3.connect(db_path(d)) as c:
        return c.execute("SELECT seq, bytes FROM snapshots WHERE complete = 1 ORDER BY seq").fetchall()


def test_the_next_snapshot_waits_one_event_per_128_bytes_of_the_last(d):
    """--snapshot-every-events 5 and no time rule: a snapshot after 5
    events, the next not before one event per 128 bytes of the last one
    (and at the first commit after that)."""
    d.stop()
    d.extra = ["--snapshot-every-events", "5", "--snapshot-every-s", "86400"]
    d.start()
    test_replay.lifecycle(d)
    n = 0
    while len(snapshot_rows(d)) < 2:  # the store keeps the newest two
        d.ok("POST", "/v1/jobs", {"tenant": "product/search", "gpus": 1, "name": "more-%d" % n})
        n += 1
        # a guard, not the rule: the gap is one event per 128 bytes of the first snapshot (about 430 events
        # for its 55 KB; at least one event a submit)
        assert n < 2000, "fewer than two snapshots:\n" + d.read_log()
    rows = snapshot_rows(d)
    for (seq, size), (after, _) in zip(rows, rows[1:]):
        gap = max(5, size // 128)
        assert gap >= 20, (size, "a snapshot this small does not test the rule")
        assert seq + gap <= after <= seq + gap + 5, (seq, size, gap, after)


def corrupt(d, seq):
    with sqlite3.connect(db_path(d)) as c:
        data = bytearray(c.execute("SELECT data FROM snapshot_parts WHERE seq = ? AND part = 0", (seq,)).fetchone()[0])
        data[len(data) // 2] ^= 0xff
        c.execute("UPDATE snapshot_parts SET data = ? WHERE seq = ? AND part = 0", (bytes(data), seq))


def test_a_corrupt_newest_snapshot_falls_back_to_the_previous_one(d):
    busy_daemon(d)
    d.stop()
    newest, previous = snapshots(d)[:2]
    corrupt(d, newest)
    log = restart(d, kill=False)
    assert re.search(r"event=snapshot_invalid seq=%d stage=load error=\"[^\"]*SHA-256" % newest, log), log
    seq, _ = replay_line(log)
    assert seq == previous, (seq, previous, log)
    d.ok("POST", "/v1/jobs", {"tenant": "research/nlp", "gpus": 1})


def test_every_snapshot_corrupt_means_a_full_replay(d):
    busy_daemon(d)
    d.stop()
    for s in snapshots(d):
        corrupt(d, s)
    log = restart(d, kill=False)
    assert log.count("event=snapshot_invalid") >= 2, log
    seq, events = replay_line(log)
    assert seq == 0, log
    with sqlite3.connect(db_path(d)) as c:
        last = c.execute("SELECT max(seq) FROM events").fetchone()[0]
    assert events >= last - 1, (events, last)


if __name__ == "__main__":
    gpd.run([test_a_restart_after_kill_9_starts_from_the_newest_snapshot_and_loses_nothing,
             test_a_corrupt_newest_snapshot_falls_back_to_the_previous_one,
             test_every_snapshot_corrupt_means_a_full_replay,
             test_the_next_snapshot_waits_one_event_per_128_bytes_of_the_last], extra=EXTRA)
