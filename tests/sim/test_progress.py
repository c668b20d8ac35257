#!/usr/bin/env python3
"""gpupool-sim's progress line (src/sim/progress.h), on the example trace:
  - stderr on a terminal (a pty): one line per policy run, rewritten in
    place ("\\r" + erase), naming the policy and its place, the simulated
    day, and erased at the end (the last bytes written clear the line);
  - stderr a pipe: nothing at all on stderr;
  - --quiet on a terminal: nothing either.
The summary on stdout is the same in all three cases.
GP_BIN names the folder with the binaries, GP_SOURCE_DIR the project (ctest sets both).
"""
import json
import os
import pty
import subprocess
import sys

SIM = os.path.join(os.environ.get("GP_BIN", "build/bin"), "gpupool-sim")
SRC = os.environ.get("GP_SOURCE_DIR", ".")
EX = os.path.join(SRC, "examples", "sim")
ARGS = [SIM, "--fleet", f"{EX}/fleet.yaml", "--tenants", f"{EX}/tenants.yaml",
        "--trace", f"itp:{EX}/team-a.csv", "--trace", f"itp:{EX}/team-b.csv",
        "--policy", "static,gpupool", "--no-plots"]
CLEAR = "\r\x1b[K"


def run_on_pty(extra):
    """stderr on a fresh pty, stdout piped; returns (stdout, everything written to the pty)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(ARGS + extra, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    out = p.stdout.read()
    written = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        written += chunk
    os.close(master)
    assert p.wait(timeout=60) == 0, f"gpupool-sim failed: {written!r}"
    return out, written.decode()


def summary(stdout):
    return [l for l in stdout.splitlines() if l.startswith("{")][-1]


def without_times(line):
    doc = json.loads(line)
    for run in doc["runs"]:
        for key in ("wall_s", "events_per_s"):
            run.pop(key)
    return doc


def main():
    out_tty, tty = run_on_pty([])
    assert "gpupool-sim: static (1/2)" in tty, tty
    assert "gpupool-sim: gpupool (2/2)" in tty, tty
    assert tty.startswith(CLEAR), repr(tty[:40])
    assert tty.endswith(CLEAR), repr(tty[-40:])
    assert "\n" not in tty, "the progress line must be rewritten in place, not scrolled"

    piped = subprocess.run(ARGS, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "", repr(piped.stderr)

    out_quiet, quiet = run_on_pty(["--quiet"])
    assert quiet == "", repr(quiet)

    same = without_times(summary(out_tty))
    assert same == without_times(summary(piped.stdout)) == without_times(summary(out_quiet))
    print("ok: progress on a terminal, silence on a pipe and with --quiet")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        sys.exit(1)
