"""pgcluster.py - a throw-away PostgreSQL cluster for tests (Debian's postgresql).

A PgCluster owns one data directory under its workdir: initdb on first
start, a postmaster listening on 127.0.0.1:PORT and on a unix socket in the
workdir, trust authentication for local and loopback connections
(replication included), fsync on (the durability tests kill it).  As root
every server program runs as the `postgres` user (initdb refuses root);
clients (psql) run as we are and connect over loopback.  The superuser
role is `gpupool` and owns the database `gpupool`.

Example:
    pg = PgCluster(os.path.join(PgCluster.make_workdir(), "primary"))
    pg.start()
    url = pg.url()           # postgresql://gpupool@127.0.0.1:PORT/gpupool
    pg.psql("SELECT 1")      # '1'
    standby = pg.make_standby(other_dir)   # streaming replica, started
    both = PgCluster.multi_host_url([pg, standby])   # ...?target_session_attrs=read-write
    pg.kill9(); standby.promote()          # `both` now reaches the standby
    pg.stop()                # also at exit: call stop() in a finally

available() is False when the binaries (or, as root, the postgres user)
are missing: the tests that need a cluster exit 77 (ctest SKIP_RETURN_CODE).
"""

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def _bindir():
    override = os.environ.get("GP_PG_BINDIR")
    if override:
        return override
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    return dirs[-1] if dirs else None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    USER = "gpupool"

    def __init__(self, workdir, port=None):
        self.workdir = os.path.abspath(workdir)
        self.port = port or _free_port()
        self.data = os.path.join(self.workdir, "data")
        self.log = os.path.join(self.workdir, "postgres.log")
        self.bindir = _bindir()
        os.makedirs(self.workdir, exist_ok=True)
        self._own(self.workdir)

    # ---- availability ----

    @staticmethod
    def available():
        bindir = _bindir()
        if not bindir or not all(os.path.exists(os.path.join(bindir, p)) for p in ("initdb", "pg_ctl", "postgres")):
            return False
        if shutil.which("psql") is None and not os.path.exists(os.path.join(bindir, "psql")):
            return False
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return False
        return True

    @staticmethod
    def make_workdir(prefix="gp-pg-"):
        """A new temporary directory the postgres user can enter (mkdtemp's is 0700)."""
        path = tempfile.mkdtemp(prefix=prefix)
        os.chmod(path, 0o755)
        return path

    # ---- running the server's programs ----

    def _as_server(self, argv):
        """argv run as the postgres user when we are root."""
        if os.geteuid() == 0:
            return ["runuser", "-u", "postgres", "--"] + argv
        return argv

    def _own(self, path):
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(path, pw.pw_uid, pw.pw_gid)
            os.chmod(path, 0o755)

    def _bin(self, name):
        return os.path.join(self.bindir, name)

    def _run(self, argv, check=True):
        r = subprocess.run(self._as_server(argv), capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"{os.path.basename(argv[0])} failed: {r.stderr.strip()}")
        return r

    def _initdb(self):
        self._run([self._bin("initdb"), "-D", self.data, "-U", self.USER, "-A", "trust", "-E", "UTF8",
                   "--locale=C.UTF-8", "--no-instructions"])
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("\n# pgcluster.py\nfsync = on\nsynchronous_commit = on\nwal_level = replica\n"
                    "max_wal_senders = 5\nhot_standby = on\nmax_connections = 200\n"
                    "shared_buffers = 64MB\nlog_min_messages = warning\n")
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write("local all all trust\nhost all all 127.0.0.1/32 trust\n"
                    "local replication all trust\nhost replication all 127.0.0.1/32 trust\n")

    def _pg_ctl(self, *args, check=True):
        opts = f"-p {self.port} -k {self.workdir} -c listen_addresses=127.0.0.1"
        return self._run([self._bin("pg_ctl"), "-D", self.data, "-l", self.log, "-o", opts, "-w", "-t", "60"]
                         + list(args), check=check)

    # ---- life cycle ----

    def start(self):
        fresh = not os.path.exists(os.path.join(self.data, "PG_VERSION"))
        if fresh:
            self._initdb()
        r = self._pg_ctl("start", check=False)
        if r.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {r.stderr}\n{self._log_tail()}")
        if fresh and not os.path.exists(os.path.join(self.data, "standby.signal")):
            self.psql("CREATE DATABASE gpupool", dbname="postgres")

    def stop(self, mode="fast"):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self._pg_ctl("stop", "-m", mode, check=False)

    def kill9(self):
        """SIGKILL the postmaster and every backend of it, as a crash would."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        victims = [pid] + self._children(pid)
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.time() + 10
        while time.time() < deadline and any(os.path.exists(f"/proc/{p}") for p in victims):
            time.sleep(0.05)
        # A zombie nobody has reaped yet still "exists" for the next
        # postmaster's stale-lock check: the lock file of a dead server goes.
        if not any(self._alive(p) for p in victims):
            try:
                os.unlink(os.path.join(self.data, "postmaster.pid"))
            except FileNotFoundError:
                pass

    def restart(self):
        self.stop()
        self.start()

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pid = int(f.readline())
        except (OSError, ValueError):
            return None
        return pid if self._alive(pid) else None

    @staticmethod
    def _alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    @staticmethod
    def _children(pid):
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                return [int(c) for c in f.read().split()]
        except OSError:
            return []

    def _log_tail(self):
        try:
            with open(self.log) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    # ---- clients ----

    def url(self, dbname="gpupool"):
        return f"postgresql://{self.USER}@127.0.0.1:{self.port}/{dbname}"

    @staticmethod
    def multi_host_url(clusters, dbname="gpupool"):
        """One URL naming every cluster, answered by the one that takes writes
        (libpq tries the hosts in order): how gpupoold follows a promoted standby."""
        hosts = ",".join(f"127.0.0.1:{c.port}" for c in clusters)
        return f"postgresql://{PgCluster.USER}@{hosts}/{dbname}?target_session_attrs=read-write"

    def psql(self, sql, dbname="gpupool"):
        return PgCluster.query(self.url(dbname), sql)

    @staticmethod
    def query(url, sql):
        """psql -c sql on url; its output, stripped (rows one a line, columns |-separated)."""
        psql = shutil.which("psql") or os.path.join(_bindir() or "", "psql")
        r = subprocess.run([psql, "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError(f"psql failed ({sql}): {r.stderr.strip()}")
        return r.stdout.strip()

    def terminate_backends(self, application_name=None):
        """pg_terminate_backend of the client backends (those of application_name when given);
        returns how many were terminated."""
        where = "backend_type = 'client backend' AND pid <> pg_backend_pid()"
        if application_name is not None:
            where += " AND application_name = '" + application_name.replace("'", "''") + "'"
        out = self.psql(f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE {where}",
                        dbname="postgres")
        return int(out or 0)

    # ---- replication ----

    def make_standby(self, workdir):
        """A streaming replica of this cluster (pg_basebackup -R), started."""
        standby = PgCluster(workdir)
        self._run([self._bin("pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.USER,
                   "-D", standby.data, "-R", "-X", "stream", "-c", "fast"])
        standby.start()
        return standby

    def promote(self):
        self._run([self._bin("pg_ctl"), "-D", self.data, "promote", "-w", "-t", "60"])

    def in_recovery(self):
        return self.psql("SELECT pg_is_in_recovery()", dbname="postgres") == "t"
