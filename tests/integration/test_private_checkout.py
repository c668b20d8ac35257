#!/usr/bin/env python3
"""The suite's jobs pass from a checkout that only root may enter.

A newcomer clones into root's home (/root is 0700 on Debian) and runs
`make test` as root.  The jobs a root agent starts run as the job's own
identity (a per-job uid when the job names no user), never as root, so a
job must never need a file inside the checkout or its build folder: a test
whose job runs a program or script from there fails only on such a clone.

This test makes that clone: a 0700 folder holding a copy of the programs
(GP_BIN) and of tests/ and examples/, and runs the system tests whose jobs
execute files (the agent's fault injection from inside a job, the node
boundary's probes) from it.  Each must pass there as it does here.
Python standard library only.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("GP_BIN", os.path.join(ROOT, "build", "bin"))
PROGRAMS = ("gpupoold", "gpupool", "gpupool-agent", "gpupool-supervise")
# The system tests whose jobs run files of their own.
SCRIPTS = ("test_agent_shares.py", "test_node_boundary.py")


def private_clone():
    top = tempfile.mkdtemp(prefix="gpupool-private-")  # 0700, as /root is
    checkout = os.path.join(top, "checkout")
    os.mkdir(checkout, 0o755)  # open below the private folder: only the top one is closed
    for folder in ("tests", "examples"):
        shutil.copytree(os.path.join(ROOT, folder), os.path.join(checkout, folder),
                        ignore=shutil.ignore_patterns("__pycache__"))
    binary = os.path.join(checkout, "build", "bin")
    os.makedirs(binary)
    for name in PROGRAMS:
        shutil.copy2(os.path.join(BIN, name), binary)
    return top, checkout, binary


def main():
    if os.geteuid() != 0:
        print("skip: needs root (the jobs of a non-root agent run as the agent's user)")
        return 0
    top, checkout, binary = private_clone()
    assert os.stat(top).st_mode & 0o777 == 0o700
    failed = []
    try:
        for script in SCRIPTS:
            path = os.path.join(checkout, "tests", "integration", script)
            if not os.path.exists(path):
                failed.append("%s: missing" % script)
                continue
            env = dict(os.environ, GP_BIN=binary)
            run = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=280)
            print("== %s from a 0700 checkout: exit %d" % (script, run.returncode))
            if run.returncode != 0:
                print(run.stdout[-6000:])
                print(run.stderr[-6000:])
                failed.append(script)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if failed:
        print("FAILED from a private checkout: " + ", ".join(failed))
        return 1
    print("%d passed, 0 failed" % len(SCRIPTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
