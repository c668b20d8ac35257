"""test_pgcluster.py - pgcluster.py does what the PostgreSQL tests rely on.

A cluster starts and answers; a committed row survives kill -9 of the
whole server (fsync on) and a restart; terminate_backends ends exactly the
backends of one application_name; a standby streams the primary's rows
and, promoted, takes writes; a multi-host URL (target_session_attrs=
read-write) reaches the primary, then the promoted standby.  Exits 77 (skip) without PostgreSQL.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pgcluster import PgCluster  # noqa: E402


def wait_for(what, cond, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def idle_client(pg, appname):
    """A psql that holds a connection open under application_name appname."""
    env = dict(os.environ, PGAPPNAME=appname)
    return subprocess.Popen(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", "gpupool", "-d",
                             "gpupool"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, text=True)


def check_start_and_survive_kill9(pg):
    assert pg.psql("SELECT 1") == "1"
    pg.psql("CREATE TABLE t(x BIGINT); INSERT INTO t VALUES (42)")
    pg.kill9()
    assert pg.postmaster_pid() is None, "postmaster still alive after kill9"
    pg.start()
    assert pg.psql("SELECT x FROM t") == "42"
    pg.restart()
    assert pg.psql("SELECT count(*) FROM t") == "1"


def check_terminate_backends(pg):
    mine, other = idle_client(pg, "gp-test-victim"), idle_client(pg, "gp-test-bystander")
    try:
        count = "SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s'"
        wait_for("both clients", lambda: pg.psql(count % "gp-test-victim") == "1"
                 and pg.psql(count % "gp-test-bystander") == "1")
        assert pg.terminate_backends("gp-test-victim") == 1
        wait_for("victim gone", lambda: pg.psql(count % "gp-test-victim") == "0")
        assert pg.psql(count % "gp-test-bystander") == "1"
    finally:
        for p in (mine, other):
            p.kill()
            p.wait()


def check_standby_promote(pg, workdir):
    standby = pg.make_standby(os.path.join(workdir, "standby"))
    try:
        assert standby.in_recovery()
        both = PgCluster.multi_host_url([standby, pg])  # the standby first: libpq must skip it
        port = "SELECT inet_server_port()"
        assert PgCluster.query(both, port) == str(pg.port)
        pg.psql("INSERT INTO t VALUES (7)")
        wait_for("replication", lambda: standby.psql("SELECT count(*) FROM t") == "2")
        pg.kill9()
        standby.promote()
        wait_for("promotion", lambda: not standby.in_recovery())
        assert PgCluster.query(both, port) == str(standby.port)
        PgCluster.query(both, "INSERT INTO t VALUES (8)")
        assert standby.psql("SELECT count(*) FROM t") == "3"
    finally:
        standby.stop("immediate")


def main():
    if not PgCluster.available():
        print("skip: PostgreSQL binaries (or the postgres user) not found")
        return 77
    workdir = PgCluster.make_workdir("gp-pgcluster-")
    pg = PgCluster(os.path.join(workdir, "primary"))
    try:
        pg.start()
        check_start_and_survive_kill9(pg)
        check_terminate_backends(pg)
        check_standby_promote(pg, workdir)
    finally:
        pg.stop("immediate")
    print("pgcluster: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
