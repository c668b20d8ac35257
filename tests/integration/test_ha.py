#!/usr/bin/env python3
"""High availability: three gpupoold replicas on one store, one leads
(the leader lease, src/server/lease.h), the others follow.

  test_one_leads_the_others_redirect   GET /v1/leader everywhere; a
        follower answers writers 307 to the leader (Location = the
        leader's URL + path and query, JSON code not_leader), serves reads
        (jobs from the store, nodes from its own engine tailing the log,
        tokens made on the leader), and 503 + Retry-After while no leader
        is known (the leader killed, the store's write lock held by this
        test so nobody can take the lease yet); then one takes it.
  test_kill9_of_the_leader_under_load  8 client threads submit, following
        307s and moving on to the next replica on connection errors;
        kill -9 of the leader: a follower leads within 5 s, every
        acknowledged job is there once, no GPU is double-booked, the
        audit chain and the ledger verify, the epoch went up.
  test_a_stopped_leader_commits_nothing_and_steps_down   SIGSTOP the
        leader past its lease, a follower takes over, a submit is waiting
        in the stopped leader's socket; SIGCONT: the old leader commits
        nothing (no job, event or audit row of that request) and steps
        down: it re-executes itself and comes back as a follower.

By default the replicas share a SQLite file (one host; the lease runs on
the replicas' clocks).  SQLite caveat: a leader stopped inside a write
transaction keeps the write lock, so nobody can take over until it runs
again (on PostgreSQL, idle_in_transaction_session_timeout frees it); the
SIGSTOP case therefore stops the leader again if no follower took over.

With --pg the same cases run on a PostgreSQL cluster started by
tests/support/pgcluster.py, followed by the PostgreSQL-only ones:
pg_terminate_backend of the leader's connections; PostgreSQL restarted
under load (every replica rides through: a lost connection steps down
and reconnects, none exits, nothing acknowledged is lost); a replica
started while PostgreSQL is down waits for it (event=store_wait);
--token-file, --job-logs and --secret-key-file are required on PostgreSQL; snapshots keep
being written under a stream of submits and a restart from one passes
its check (the commit overlaps the next batch: server/loop.h); a standby
promoted behind a multi-host URL (the replicas follow it).  The ctest
integration_ha_pg runs `test_ha.py --pg`, which exits 77 (skipped) when
PostgreSQL's binaries are missing.
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "support"))
import gpd  # noqa: E402
import test_crash  # noqa: E402  (its check: acknowledged jobs, double bookings, chains)

LEASE_MS = 1500
CLIENTS = 8
TENANTS = ["research/nlp", "research/vision", "product/search", "product/ads"]


class Replica(gpd.Daemon):
    """One gpupoold of the group: any free port (--listen :0; a step-down
    keeps its socket, so the port stays), its own log and port file, the
    group's store."""

    def __init__(self, group, name):
        super().__init__(workdir=group.dir, fleet=gpd.FLEET)
        self.group, self.name = group, name
        self.log = os.path.join(group.dir, name + ".log")
        self.port_file = os.path.join(group.dir, name + ".port")

    def start(self, timeout=30):
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        args = [os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0",
                "--store", self.group.store_url, "--port-file", self.port_file,
                "--token-file", os.path.join(self.group.dir, "admin.token"),
                "--job-logs", os.path.join(self.group.dir, "logs"), "--holder", self.name,
                "--secret-key-file", os.path.join(self.group.dir, "secret.key"),
                "--lease-ms", str(LEASE_MS), "--rate-limit", "0", "--fleet", self.fleet] + self.group.extra
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(args, stdout=logf, stderr=logf)
        logf.close()
        gpd.wait_for(lambda: self.proc.poll() is not None or os.path.exists(self.port_file), timeout,
                     "%s to listen" % self.name)
        if self.proc.poll() is not None:
            raise RuntimeError("%s exited with %d:\n%s" % (self.name, self.proc.returncode, self.read_log()))
        self.port = self.bound_port()
        token_file = os.path.join(self.group.dir, "admin.token")
        gpd.wait_for(lambda: os.path.exists(token_file) and open(token_file).read().strip(), timeout,
                     "the bootstrap token")
        with open(token_file) as f:
            self.token = f.read().strip()
        return self

    def bound_port(self):
        with open(self.port_file) as f:
            return int(f.read())

    def leader(self):
        """GET /v1/leader, or None when the replica does not answer."""
        try:
            st, out = self.call("GET", "/v1/leader", token="")
        except OSError:
            return None
        return out if st == 200 else None

    def signal(self, sig):
        self.proc.send_signal(sig)


class Group:
    """Three replicas on one store (SQLite file, or a PgCluster's database)."""

    def __init__(self, pg=None):
        self.dir = tempfile.mkdtemp(prefix="gpupool-ha-")
        self.pg = pg
        self.store_url = pg.url() if pg else "sqlite:" + os.path.join(self.dir, "gpupool.db")
        self.replicas = [Replica(self, "r%d" % i) for i in range(3)]
        self.extra = []  # more gpupoold options for every replica

    def start(self):
        self.replicas[0].start()
        gpd.wait_for(lambda: (self.replicas[0].leader() or {}).get("role") == "leader", 20, "r0 to lead")
        for r in self.replicas[1:]:
            r.start()
        return self

    def leader(self, among=None):
        """The replica that says it leads, or None."""
        for r in among or self.replicas:
            if r.proc and r.proc.poll() is None and (r.leader() or {}).get("role") == "leader":
                return r
        return None

    def wait_leader(self, among, timeout):
        return gpd.wait_for(lambda: self.leader(among), timeout, "a leader among %s" % [r.name for r in among])

    def logs(self):
        return "".join("--- %s ---\n%s" % (r.name, r.read_log(3000)) for r in self.replicas)

    def cleanup(self):
        for r in self.replicas:
            if r.proc and r.proc.poll() is None:
                r.signal(signal.SIGCONT)
            r.kill9()
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- a client that follows the leader ----

def post_following(urls, path, body, token, start=0, timeout=5, where=None):
    """POSTs body to the first replica that takes it, following 307,
    waiting out 503 and trying the next replica when one refuses the
    connection; (status, reply) of the answer, or (None, error) when no
    replica answered in time or the request may have been applied without
    its answer (then it is not sent again: no submit is applied twice).
    where["url"]: the URL that answered."""
    deadline = time.time() + 15
    i = start
    target = urls[i % len(urls)] + path
    while time.time() < deadline:
        req = urllib.request.Request(target, data=json.dumps(body).encode(), method="POST")
        req.add_header("Authorization", "Bearer " + token)
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                if where is not None:
                    where["url"] = target
                return resp.status, json.loads(resp.read().decode())
        except urllib.error.HTTPError as e:
            if e.code == 307:
                target = e.headers["Location"]
                continue
            if e.code == 503:
                time.sleep(0.2)
                continue
            return e.code, e.read().decode()
        except ConnectionRefusedError:  # nothing was sent: the next replica may take it
            i += 1
            target = urls[i % len(urls)] + path
            time.sleep(0.05)
        except (OSError, ValueError) as e:  # sent, maybe applied: not sent again
            return None, str(e)
    return None, "no replica answered"


class Client(threading.Thread):
    def __init__(self, urls, token, k, stop):
        super().__init__(daemon=True)
        self.urls, self.token, self.k, self.stop = urls, token, k, stop
        self.acked = {}   # job id -> name
        self.cancelled = set()  # none: test_crash.check reads it
        self.ack_times = []  # (when, the URL that acknowledged)
        self.rng = random.Random(k)

    def run(self):
        seq = 0
        while not self.stop.is_set():
            seq += 1
            name = "c%d-%d" % (self.k, seq)
            body = {"tenant": self.rng.choice(TENANTS), "name": name, "gpus": self.rng.choice([1, 1, 2, 4, 8])}
            # a request whose answer was lost is not sent again: the next one has a new name
            where = {}
            st, out = post_following(self.urls, "/v1/jobs", body, self.token, start=self.k, where=where)
            if st == 201:
                self.acked[out["id"]] = name
                self.ack_times.append((time.time(), where["url"]))


def all_jobs(r):
    jobs, before = [], None
    while True:
        page = r.ok("GET", "/v1/jobs?limit=1000" + ("&before=%d" % before if before else ""))
        jobs += page["jobs"]
        if page["next"] is None:
            return jobs
        before = page["next"]


def under_load(g, action, before=1.0, after=3.0):
    """CLIENTS submitting to every replica; action() after `before` s, the
    clients stopped `after` s later; the clients."""
    stop = threading.Event()
    clients = [Client([r.url for r in g.replicas], g.replicas[0].token, k, stop) for k in range(CLIENTS)]
    for c in clients:
        c.start()
    time.sleep(before)
    action()
    time.sleep(after)
    stop.set()
    for c in clients:
        c.join(timeout=30)
    return clients


# ---- the cases ----

def test_one_leads_the_others_redirect(g):
    r0, r1, r2 = g.replicas
    views = [r.leader() for r in g.replicas]
    assert [v["role"] for v in views] == ["leader", "follower", "follower"], views
    assert all(v["leader"] == r0.url for v in views), views
    assert len({v["epoch"] for v in views}) == 1, views
    assert [v["self"] for v in views] == [r.url for r in g.replicas], views

    # a writer on a follower: 307 to the leader, path and query kept
    st, out = r1.call("POST", "/v1/jobs?dry=0", {"tenant": "x"})
    assert st == 307 and out["error"]["code"] == "not_leader" and out["error"]["leader"] == r0.url, (st, out)
    req = urllib.request.Request(r2.url + "/v1/tenants/a?x=1", data=b"{}", method="PUT")
    try:
        urllib.request.urlopen(req, timeout=10)
        raise AssertionError("a follower took a PUT")
    except urllib.error.HTTPError as e:
        assert e.code == 307 and e.headers["Location"] == r0.url + "/v1/tenants/a?x=1", (e.code, e.headers)

    # followed, it is done by the leader; the followers read it
    r0.cli("apply", "-f", gpd.TENANTS)
    st, job = post_following([r1.url], "/v1/jobs", {"tenant": "research/nlp", "name": "j1", "gpus": 1}, r0.token)
    assert st == 201, (st, job)
    for r in (r1, r2):
        got = gpd.wait_for(lambda: r.call("GET", "/v1/jobs/%d" % job["id"])[1], 10, "the job on " + r.name)
        assert got["name"] == "j1", got
        nodes = gpd.wait_for(lambda: (r.ok("GET", "/v1/nodes") == r0.ok("GET", "/v1/nodes")) or None, 10,
                             "the follower's engine to catch up")
        assert nodes
    # a token made on the leader works on a follower once it reloaded the tokens
    tok = r0.ok("POST", "/v1/tokens", {"name": "reader", "role": "auditor"})["token"]
    gpd.wait_for(lambda: r1.call("GET", "/v1/jobs", token=tok)[0] == 200, 10, "the new token on a follower")

    # no leader known: r0 killed, the store's write lock held so nobody can take the lease
    if g.pg:
        return  # the lock trick is SQLite's; the PostgreSQL cases cover the takeover
    lock = sqlite3.connect(g.store_url[len("sqlite:"):], isolation_level=None, timeout=10)
    r0.kill9()
    lock.execute("BEGIN IMMEDIATE")
    try:
        gpd.wait_for(lambda: r1.leader()["leader"] is None, 10, "the lease to expire")
        req = urllib.request.Request(r1.url + "/v1/jobs", data=b"{}", method="POST")
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("a follower took a POST")
        except urllib.error.HTTPError as e:
            body = json.loads(e.read().decode())
            assert e.code == 503 and e.headers["Retry-After"] == "1", (e.code, e.headers)
            assert body["error"]["code"] == "no_leader", body
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    new = g.wait_leader([r1, r2], 10)
    assert new.leader()["epoch"] == views[0]["epoch"] + 1
    st, _ = post_following([r1.url, r2.url], "/v1/jobs", {"tenant": "research/nlp", "name": "j2", "gpus": 1},
                           r0.token)
    assert st == 201


def test_kill9_of_the_leader_under_load(g):
    r0 = g.replicas[0]
    r0.cli("apply", "-f", gpd.TENANTS)
    epoch = r0.leader()["epoch"]
    killed = []

    def kill():
        killed.append(time.time())
        r0.kill9()
    clients = under_load(g, kill, before=1.5, after=5.5)
    new = g.wait_leader(g.replicas[1:], 10)
    after = [t for c in clients for t, url in c.ack_times if t > killed[0] and not url.startswith(r0.url + "/")]
    assert after, "no submit acknowledged after the kill"
    assert min(after) - killed[0] < 5.0, "failover took %.1f s" % (min(after) - killed[0])
    acked = test_crash.check(new, clients)[0]
    assert acked > 0 and new.leader()["epoch"] > epoch
    print("     %d acknowledged, first submit on %s %.2f s after the kill" % (acked, new.name, min(after) - killed[0]))


def test_a_stopped_leader_commits_nothing_and_steps_down(g):
    r0, r1, r2 = g.replicas
    r0.cli("apply", "-f", gpd.TENANTS)
    epoch = r0.leader()["epoch"]
    for attempt in range(5):
        r0.signal(signal.SIGSTOP)
        try:
            new = g.wait_leader([r1, r2], 3 * LEASE_MS / 1000.0 + 2)
            break
        except AssertionError:  # SQLite: stopped inside a transaction, holding the write lock (see above)
            r0.signal(signal.SIGCONT)
            time.sleep(0.3)
    else:
        raise AssertionError("no follower took over from the stopped leader")
    assert new.leader()["epoch"] == epoch + 1
    # a submit waits in the stopped leader's socket
    answer = {}

    def stale_submit():
        try:
            answer["reply"] = r0.call("POST", "/v1/jobs", {"tenant": "research/nlp", "name": "stale", "gpus": 1},
                                      headers={"X-Request-Id": "stale-submit"})
        except OSError as e:
            answer["error"] = e
    t = threading.Thread(target=stale_submit, daemon=True)
    t.start()
    time.sleep(0.5)
    r0.signal(signal.SIGCONT)
    t.join(timeout=30)
    gpd.wait_for(lambda: "event=step_down" in r0.read_log(None), 10, "the old leader to step down")
    view = gpd.wait_for(lambda: r0.leader(), 20, "the old leader back")
    assert view["role"] == "follower" and view["leader"] == new.url, view
    assert answer.get("reply", (None,))[0] in (None, 307, 503), answer  # never acknowledged
    assert r0.proc.poll() is None, "it re-executed in place (same process)"
    assert r0.bound_port() == r0.port, "the step-down kept its listening socket"
    # nothing of the stale request anywhere
    jobs = all_jobs(new)
    assert "stale" not in [j["name"] for j in jobs]
    audit = new.ok("GET", "/v1/audit?limit=1000")
    assert all(a.get("request_id") != "stale-submit" for a in audit.get("records", audit.get("audit", []))), audit
    events = new.ok("GET", "/v1/log?limit=1000")["events"]
    assert all("stale" != (e["payload"].get("name") if isinstance(e["payload"], dict) else None) for e in events)
    for path in ("/v1/audit/verify", "/v1/ledger/verify"):
        assert new.ok("GET", path)["ok"]
    st, _ = post_following([r0.url], "/v1/jobs", {"tenant": "research/nlp", "name": "after", "gpus": 1},
                           new.token)
    assert st == 201


# ---- PostgreSQL only (--pg; tests/support/pgcluster.py) ----

def pg_backends(g, holder):
    out = g.pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gpupoold-%s'" % holder)
    return int(out.strip().split()[-1]) if out.strip() else 0


def test_pg_terminate_backend_of_the_leader(g):
    g.replicas[0].cli("apply", "-f", gpd.TENANTS)
    assert pg_backends(g, "r0") > 0
    killed = []

    def terminate():
        killed.append(time.time())
        g.pg.terminate_backends(application_name="gpupoold-r0")
    clients = under_load(g, terminate)
    leader = g.wait_leader(g.replicas, 15)
    assert test_crash.check(leader, clients)[0] > 0
    rode_through(g)  # r0 stepped down and came back
    print("     no submit acknowledged for at most %.2f s after the termination" % longest_gap_after(clients, killed[0]))


def rode_through(g, timeout=20):
    """Every replica is still running (none exited: a lost connection
    steps down and reconnects) and answers again."""
    for r in g.replicas:
        gpd.wait_for(lambda: r.proc.poll() is not None or r.leader(), timeout, r.name + " to answer")
        assert r.proc.poll() is None, "%s exited:\n%s" % (r.name, r.read_log())
        assert "action=exit" not in r.read_log(None), r.read_log()


def longest_gap_after(clients, t):
    """The longest time without an acknowledged submit, from t on."""
    times = sorted([t] + [w for c in clients for w, _ in c.ack_times if w > t])
    return max(b - a for a, b in zip(times, times[1:])) if len(times) > 1 else float("inf")


def first_ack_after(clients, t):
    return min([w for c in clients for w, _ in c.ack_times if w > t] or [float("inf")]) - t


def test_pg_restarted_under_load(g):
    g.replicas[0].cli("apply", "-f", gpd.TENANTS)
    back = []

    def restart():
        g.pg.restart()
        back.append(time.time())
    clients = under_load(g, restart, after=6.0)
    leader = g.wait_leader(g.replicas, 20)
    assert test_crash.check(leader, clients)[0] > 0
    rode_through(g)
    assert any("event=step_down" in r.read_log(None) for r in g.replicas), g.logs()
    took = first_ack_after(clients, back[0])
    assert took < 6.0, "no submit acknowledged after PostgreSQL came back"
    print("     first submit on %s %.2f s after PostgreSQL was back" % (leader.name, took))


def test_pg_a_replica_waits_for_the_database_at_start(g):
    g.pg.stop()
    late = Replica(g, "r3")
    started = {}
    t = threading.Thread(target=lambda: started.update(r=late.start()), daemon=True)
    t.start()
    try:
        gpd.wait_for(lambda: "event=store_wait" in late.read_log(None), 10, "r3 to wait for the database")
        assert late.proc.poll() is None, late.read_log()
        g.pg.start()
        t.join(timeout=30)
        assert started.get("r") and late.leader()["role"] in ("leader", "follower"), late.read_log()
        g.replicas.append(late)  # checked and cleaned up with the others
        rode_through(g)
    finally:
        late.kill9()


def test_pg_paths_are_required(g):
    """No SQLite file to put them next to: --token-file, --job-logs and --secret-key-file are asked for."""
    base = [os.path.join(gpd.BIN, "gpupoold"), "--listen", "127.0.0.1:0", "--store", g.store_url]
    token, logs, key = (["--token-file", os.path.join(g.dir, "t")], ["--job-logs", g.dir],
                        ["--secret-key-file", os.path.join(g.dir, "k")])
    for args, flag in ((logs + key, "--token-file"), (token + key, "--job-logs"), (token + logs, "--secret-key-file")):
        p = subprocess.run(base + args, capture_output=True, text=True, timeout=30)
        assert p.returncode != 0 and flag + " is required with a PostgreSQL store" in p.stdout + p.stderr, \
            (p.returncode, p.stdout, p.stderr)


def test_pg_standby_promoted_behind_a_multi_host_url(g):
    g.replicas[0].cli("apply", "-f", gpd.TENANTS)
    promoted = []

    def promote():
        g.pg.stop(mode="immediate")
        g.standby.promote()
        promoted.append(time.time())
    clients = under_load(g, promote, after=6.0)
    leader = g.wait_leader(g.replicas, 30)
    rode_through(g)
    print("     first submit on %s %.2f s after the promotion" % (leader.name, first_ack_after(clients, promoted[0])))
    # the standby replays asynchronously: what it holds is checked (chains, no double booking, new submits),
    # not every acknowledgement of the lost primary
    st, _ = post_following([leader.url], "/v1/jobs", {"tenant": "research/nlp", "name": "promoted", "gpus": 1},
                           leader.token)
    assert st == 201
    for path in ("/v1/audit/verify", "/v1/ledger/verify"):
        assert leader.ok("GET", path)["ok"]


def test_pg_snapshots_under_load_hold_what_was_committed(g):
    """The leader's next batch fills while its commit is in flight
    (server/loop.h); a snapshot is taken only when the engine holds
    exactly what is committed.  Under a stream of submits from 8 clients
    (--snapshot-every-events 20) snapshots keep being written, and after
    kill -9 of the leader a restart from the newest one passes its check
    against the tables (no snapshot_invalid), as does the follower that
    takes over; nothing acknowledged is lost."""
    r0 = g.replicas[0]
    r0.cli("apply", "-f", gpd.TENANTS)
    seen = []

    def snapshot_seqs():
        out = g.pg.psql("SELECT seq FROM snapshots WHERE complete = 1 ORDER BY seq")
        return [int(x) for x in out.split()] if out else []

    def watch():
        for _ in range(30):
            seen.extend(x for x in snapshot_seqs() if x not in seen)
            time.sleep(0.1)
    clients = under_load(g, watch, before=1.0, after=0.5)
    assert len(seen) >= 3, "snapshots written under load: %s\n%s" % (seen, g.logs())
    r0.kill9()
    new = g.wait_leader(g.replicas[1:], 10)
    test_crash.check(new, clients)
    before = len(r0.read_log(tail=None))
    r0.start()
    log = r0.read_log(tail=None)[before:]
    assert "event=replay snapshot_seq=" in log and "snapshot_seq=0 " not in log, log
    assert "snapshot_invalid" not in log and "replay_differs" not in log, log
    for r in g.replicas:
        assert "snapshot_invalid" not in r.read_log(tail=None), r.name


def _snapshotting_pg_group():
    g = pg_group()
    g.extra = ["--snapshot-every-events", "20", "--snapshot-every-s", "1"]
    return g


SQLITE_CASES = [test_one_leads_the_others_redirect, test_kill9_of_the_leader_under_load,
                test_a_stopped_leader_commits_nothing_and_steps_down]
PG_CASES = [test_pg_terminate_backend_of_the_leader, test_pg_restarted_under_load,
            test_pg_a_replica_waits_for_the_database_at_start, test_pg_paths_are_required]


def pg_group():
    import pgcluster  # tests/support/pgcluster.py
    pg = pgcluster.PgCluster(tempfile.mkdtemp(prefix="gpupool-pg-"))
    pg.start()
    g = Group(pg)
    g.cleanups = [pg.stop]
    return g


def pg_standby_group():
    import pgcluster
    primary = pgcluster.PgCluster(tempfile.mkdtemp(prefix="gpupool-pg-"))
    primary.start()
    standby = primary.make_standby(tempfile.mkdtemp(prefix="gpupool-pg-standby-"))
    g = Group(primary)
    g.standby = standby
    g.store_url = ("postgresql://gpupool@127.0.0.1:%d,127.0.0.1:%d/gpupool?target_session_attrs=read-write"
                   % (primary.port, standby.port))
    g.cleanups = [standby.stop, primary.stop]
    return g


def run_case(make_group, case):
    g = make_group()
    t0 = time.time()
    try:
        g.start()
        case(g)
        print("ok   %s (%.1fs)" % (case.__name__, time.time() - t0), flush=True)
        return True
    except Exception as e:  # noqa: BLE001 - report every failure and go on
        where = traceback.extract_tb(e.__traceback__)[-1]
        print("FAIL %s: %s (%s:%d: %s)\n%s" % (case.__name__, e, os.path.basename(where.filename), where.lineno,
                                               where.line, g.logs()), flush=True)
        return False
    finally:
        g.cleanup()
        for stop in getattr(g, "cleanups", []):
            try:
                stop()
            except Exception:  # noqa: BLE001 - the cluster may be down already
                pass


def main():
    if "--pg" in sys.argv:
        import pgcluster
        if not pgcluster.PgCluster.available():
            print("skipped: PostgreSQL's binaries are missing")
            sys.exit(77)
        results = [run_case(pg_group, c) for c in SQLITE_CASES + PG_CASES]
        results.append(run_case(_snapshotting_pg_group, test_pg_snapshots_under_load_hold_what_was_committed))
        results.append(run_case(pg_standby_group, test_pg_standby_promoted_behind_a_multi_host_url))
    else:
        results = [run_case(Group, c) for c in SQLITE_CASES]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
