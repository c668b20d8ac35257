"""run_with_pg.py - runs a test against a throw-away PostgreSQL cluster.

Usage: run_with_pg.py VAR COMMAND [ARG...]
Starts a PgCluster (tests/support/pgcluster.py) in a temporary directory,
exports VAR=its URL (postgresql://gpupool@127.0.0.1:PORT/gpupool), runs
COMMAND and exits with its status; exits 77 (ctest skip) when PostgreSQL is
not installed.

Example: run_with_pg.py GP_TEST_PG_URL build/bin/test_db
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from pgcluster import PgCluster  # noqa: E402


def main(argv):
    if len(argv) < 3:
        print("usage: run_with_pg.py VAR COMMAND [ARG...]", file=sys.stderr)
        return 2
    if not PgCluster.available():
        print("skip: PostgreSQL binaries (or the postgres user) not found")
        return 77
    workdir = PgCluster.make_workdir("gp-pgtest-")
    pg = PgCluster(os.path.join(workdir, "pg"))
    try:
        pg.start()
        env = dict(os.environ, **{argv[1]: pg.url()})
        return subprocess.run(argv[2:], env=env).returncode
    finally:
        pg.stop("immediate")
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
