#!/usr/bin/env python3
"""Faults of the machine (issue 38 section 3), on a real gpupoold.

- The SQLite WAL stays bounded: after a burst of writes the -wal file is
  no larger than --store-wal-limit (the checkpointer empties a larger one
  once the readers allow), and a start after kill -9 empties whatever WAL
  the crash left.  Sizes, never times.
- The store's disk fills (a small tmpfs; needs root and mount): writes are
  refused 503 store_full naming the store, nothing changes, reads go on,
  nothing acknowledged is lost, and writes resume by themselves when the
  space returns.
- Few descriptors (ulimit -n 48, soft and hard): the start says so
  (event=fd_limit), connections past the limit wait, nothing crashes,
  and it serves again once they close.
- A node's clock steps an hour forward, or back (libfaketime on the agent
  and the supervisors it starts; Debian's faketime): a stopped job gets
  its whole grace (SIGTERM first, not SIGKILL at once), and a job that
  ignores SIGTERM is still killed when the grace ends, not an hour
  later; a time limit is gpupoold's and moves with gpupoold's clock only.
- An agent's state folder fills (a 16 MiB tmpfs): a replica told to stop
  still stops (the agent signals it directly when it cannot write the
  stop order), and once space returns the node starts replicas again.
"""
import contextlib
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402

MIB = 1 << 20
TENANT = "product/search"


def wal_size(d):
    try:
        return os.path.getsize(os.path.join(d.dir, "gpupool.db-wal"))
    except FileNotFoundError:
        return 0


def tenants(d):
    d.cli("apply", "-f", gpd.TENANTS)


def submit_burst(d, threads=4, batches=6, per_batch=100):
    """threads clients, each sending batches of per_batch submits; the ids acknowledged."""
    tenants(d)
    ids, errors = [], []

    def client(k):
        for b in range(batches):
            jobs = [{"tenant": TENANT, "gpus": 1, "name": "w%d-%d-%d" % (k, b, i),
                     "env": {"PAD": "x" * 400}} for i in range(per_batch)]
            status, out = d.call("POST", "/v1/jobs:batch", {"jobs": jobs})
            if status not in (200, 201):
                errors.append((status, out))
                return
            ids.extend(j["id"] for j in out["jobs"])

    workers = [threading.Thread(target=client, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors[:3]
    return ids


def test_the_wal_is_emptied_once_over_its_limit(d):
    d.stop()
    d.extra = ["--store-wal-limit", "1"]
    d.start()
    submit_burst(d)
    gpd.wait_for(lambda: wal_size(d) <= MIB, timeout=20,
                 what="the WAL at most --store-wal-limit 1 MiB")


def test_a_start_after_kill_9_empties_the_wal_the_crash_left(d):
    d.stop()
    d.extra = ["--store-wal-limit", "100000"]  # nothing emptied while it runs
    d.start()
    ids = submit_burst(d, threads=2, batches=4)
    left = wal_size(d)
    assert left > MIB, "the burst left only %d bytes of WAL" % left
    d.kill9()
    d.extra = []
    d.start()
    gpd.wait_for(lambda: wal_size(d) == 0, timeout=20, what="the WAL emptied at start")
    st, one = d.call("GET", "/v1/jobs/%d" % ids[-1])
    assert st == 200, (st, one)


def tmpfs(size_mib):
    """A fresh tmpfs folder, or None when this machine cannot mount one."""
    where = tempfile.mkdtemp(prefix="gpupool-full-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0700" % size_mib, "tmpfs", where],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(where)
        print("skip: cannot mount a tmpfs (%s)" % r.stderr.strip())
        return None
    return where


def fill(where, leave):
    """A file that leaves about `leave` bytes free on where's filesystem."""
    v = os.statvfs(where)
    free = v.f_bavail * v.f_frsize
    path = os.path.join(where, "filler")
    with open(path, "wb") as f:
        chunk = b"\0" * MIB
        todo = max(0, free - leave)
        while todo > 0:
            todo -= f.write(chunk[:min(len(chunk), todo)])
    return path


def test_a_full_disk_refuses_writes_serves_reads_and_recovers():
    where = tmpfs(48)
    if not where:
        return
    d = gpd.Daemon(workdir=where, extra=["--store-reserve", "8"])
    try:
        d.start()
        tenants(d)
        acked = [d.ok("POST", "/v1/jobs", {"tenant": TENANT, "gpus": 1, "name": "before-%d" % i})["id"]
                 for i in range(5)]
        filler = fill(where, 2 * MIB)
        st, out = d.call("POST", "/v1/jobs", {"tenant": TENANT, "gpus": 1, "name": "while-full"})
        assert st == 503 and out["error"]["code"] == "store_full" and out["error"]["field"] == "store", (st, out)
        st, out = d.call("DELETE", "/v1/jobs/%d" % acked[0])
        assert st == 503 and out["error"]["code"] == "store_full", (st, out)
        names = {j["name"]: j for j in d.ok("GET", "/v1/jobs?limit=100")["jobs"]}
        assert "while-full" not in names, names
        assert all("before-%d" % i in names for i in range(5)), names
        assert names["before-0"]["state"] != "cancelled", names["before-0"]
        assert "event=store_full" in d.read_log(tail=None)
        os.unlink(filler)
        acked.append(d.ok("POST", "/v1/jobs", {"tenant": TENANT, "gpus": 1, "name": "after"})["id"])
        assert "event=store_space_back" in d.read_log(tail=None)
        d.kill9()
        d.start()
        for i in acked:
            st, one = d.call("GET", "/v1/jobs/%d" % i)
            assert st == 200, (i, st, one)
        d.stop()
        print("ok   test_a_full_disk_refuses_writes_serves_reads_and_recovers", flush=True)
    except Exception:
        print("--- daemon log ---\n" + d.read_log(), flush=True)
        raise
    finally:
        d.kill9()
        subprocess.run(["umount", "-l", where])
        os.rmdir(where)


@contextlib.contextmanager
def children_started_with(**popen_args):
    """Every subprocess.Popen inside (gpd's and agentproc's) gets popen_args."""
    popen = subprocess.Popen
    subprocess.Popen = lambda *a, **k: popen(*a, **dict(k, **popen_args))
    try:
        yield
    finally:
        subprocess.Popen = popen


def test_few_descriptors_are_said_at_start_and_survived():
    d = gpd.Daemon()
    try:
        with children_started_with(preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (48, 48))):
            d.start()
        assert "event=fd_limit nofile=48" in d.read_log(tail=None), d.read_log()
        socks = [socket.create_connection(("127.0.0.1", d.port), timeout=5) for _ in range(80)]
        for s in socks:
            s.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n")  # unfinished: each holds its descriptor
        assert d.proc.poll() is None, d.read_log()
        for s in socks:
            s.close()
        gpd.wait_for(lambda: d.call("GET", "/v1/jobs")[0] == 200, timeout=20, what="serving again")
        d.stop()
        print("ok   test_few_descriptors_are_said_at_start_and_survived", flush=True)
    except Exception:
        print("--- daemon log ---\n" + d.read_log(), flush=True)
        raise
    finally:
        d.cleanup()


FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
# On SIGTERM: a line in $GPUPOOL_CHECKPOINT_DIR/term, then exit 0.
TERM_NOTED = ('echo "$GPUPOOL_REPLICA $GPUPOOL_RESTART_COUNT $$ $GPUPOOL_PEERS" >> "$GPUPOOL_CHECKPOINT_DIR/starts"; '
              'trap \'echo term >> "$GPUPOOL_CHECKPOINT_DIR/term"; exit 0\' TERM; while :; do sleep 0.1; done')
# SIGTERM ignored: only the kill at the grace's end ends it.
TERM_IGNORED = ('echo "$GPUPOOL_REPLICA $GPUPOOL_RESTART_COUNT $$ $GPUPOOL_PEERS" >> "$GPUPOOL_CHECKPOINT_DIR/starts"; '
                'trap "" TERM; while :; do sleep 0.1; done')


def agent_scenario(name, body, state_dir=None, env=None):
    """A daemon and one agent (one sim node; its state in state_dir, its processes with env); body(d, a, jobs)
    appends the jobs it submits, whose replicas cleanup ends."""
    d = gpd.Daemon(fleet=None, extra=["--node-lost-after", "30"])
    a, jobs = None, []
    try:
        d.start()
        nodes = agentproc.sim_nodes("n", 1, gpus=2)
        a = agentproc.Agent(d, agentproc.write_node_file(d.dir, nodes), extra=["--no-cgroups"],
                            join=agentproc.join_token(d), state_dir=state_dir)
        with children_started_with(**({"env": env} if env else {})):
            a.start()
        a.wait_up([n["name"] for n in nodes])
        d.ok("PUT", "/v1/tenants/t", {})
        body(d, a, jobs)
        print("ok   " + name, flush=True)
    except Exception:
        print("--- daemon log ---\n%s\n--- agent log ---\n%s" % (d.read_log(), a.read_log() if a else ""), flush=True)
        raise
    finally:
        if a:
            a.stop()
            agentproc.end_replicas([a], jobs)
        d.cleanup()


def stepped_clock(offset_s, command, check):
    """The agent's clock -- its own and its replicas' -- reads offset_s off gpupoold's."""
    if not os.path.exists(FAKETIME_LIB):
        print("skip: %s missing (Debian package faketime)" % FAKETIME_LIB)
        return
    env = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME="%+d" % offset_s, FAKETIME_DONT_FAKE_MONOTONIC="1",
               FAKETIME_DONT_RESET="1")
    # an ASan build wants its runtime first; libfaketime preloaded before it is harmless here
    env["ASAN_OPTIONS"] = ":".join(o for o in (os.environ.get("ASAN_OPTIONS", ""), "verify_asan_link_order=0") if o)

    def body(d, a, jobs):
        jobs.append(agentproc.submit(d, command=command, checkpoint_grace_s=3, time_limit_s=600))
        gpd.wait_for(lambda: a.starts(jobs[0]), what="the replica started")
        check(d, a, jobs[0])
    agent_scenario("stepped clock %+d s" % offset_s, body, env=env)


def gets_its_grace(d, a, job):
    """Cancelled: SIGTERM first, the job ends by itself; its time limit (600 s) killed nothing before."""
    assert d.ok("GET", "/v1/jobs/%d" % job)["state"] == "running"
    d.ok("DELETE", "/v1/jobs/%d" % job, expect=(200, 202))
    term = os.path.join(a.checkpoint_dir(job), "term")
    gpd.wait_for(lambda: os.path.exists(term), timeout=20, what="SIGTERM noted by the job (not SIGKILL at once)")
    agentproc.wait_state(d, job, "cancelled")


def is_killed_when_the_grace_ends(d, a, job):
    """Cancelled, ignoring SIGTERM: killed at the end of its 3 s grace, not an hour later."""
    pid = a.starts(job)[0][2]
    d.ok("DELETE", "/v1/jobs/%d" % job, expect=(200, 202))
    agentproc.wait_gone(pid, timeout=30)
    agentproc.wait_state(d, job, "cancelled")


def test_a_full_agent_state_folder_still_stops_replicas():
    where = tmpfs(16)
    if not where:
        return
    os.chmod(where, 0o755)  # replicas run as nobody and write their checkpoint folder here

    def body(d, a, jobs):
        jobs.append(agentproc.submit(d, command=TERM_NOTED, checkpoint_grace_s=3))
        gpd.wait_for(lambda: a.starts(jobs[0]), what="the replica started")
        pid = a.starts(jobs[0])[0][2]
        filler = fill(where, 0)
        d.ok("DELETE", "/v1/jobs/%d" % jobs[0], expect=(200, 202))
        agentproc.wait_gone(pid, timeout=30)
        agentproc.wait_state(d, jobs[0], "cancelled")
        assert "cannot write the stop order" in a.read_log(tail=None), a.read_log()
        os.unlink(filler)
        jobs.append(agentproc.submit(d))
        gpd.wait_for(lambda: a.starts(jobs[1]), what="a replica started once space returned")
    try:
        agent_scenario("test_a_full_agent_state_folder_still_stops_replicas", body, state_dir=where)
    finally:
        subprocess.run(["umount", "-l", where])
        os.rmdir(where)


def test_a_node_clock_an_hour_ahead_cuts_no_grace():
    stepped_clock(3600, TERM_NOTED, gets_its_grace)


def test_a_node_clock_an_hour_behind_stretches_no_grace():
    stepped_clock(-3600, TERM_IGNORED, is_killed_when_the_grace_ends)


if __name__ == "__main__":
    test_a_full_disk_refuses_writes_serves_reads_and_recovers()
    test_few_descriptors_are_said_at_start_and_survived()
    test_a_full_agent_state_folder_still_stops_replicas()
    test_a_node_clock_an_hour_ahead_cuts_no_grace()
    test_a_node_clock_an_hour_behind_stretches_no_grace()
    gpd.run([test_the_wal_is_emptied_once_over_its_limit,
             test_a_start_after_kill_9_empties_the_wal_the_crash_left])
