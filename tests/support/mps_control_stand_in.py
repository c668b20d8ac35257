#!/usr/bin/env python3
"""A stand-in for nvidia-cuda-mps-control, as far as gpupool-agent uses it.

Behaves as the real one did on an H100 (driver 580; docs/agent.md):
  -d   starts a daemon and returns at once; the daemon listens 0.2 s later
       (so the agent's wait for it to answer is exercised) on the UNIX
       socket PIPE/control (PIPE = $CUDA_MPS_PIPE_DIRECTORY), a
       SOCK_SEQPACKET socket as the real one's.  With a daemon already
       answering there, -d fails with exit status 1, as the real one does.
  (no argument)  a client: sends its stdin to the daemon through the socket.
The daemon records its start ("start $CUDA_VISIBLE_DEVICES PIPE") and each
command in $CUDA_MPS_LOG_DIRECTORY/control.log, ignores connections that
send nothing (the agent's "does it answer?" probe), and ends at `quit`.
Used by tests/agent/test_agent_share.c, tests/integration/test_agent_shares.py
and tests/gpu/run --stub.
"""
import os
import socket
import sys
import time

PIPE_DIR = os.environ["CUDA_MPS_PIPE_DIRECTORY"]
SOCKET = os.path.join(PIPE_DIR, "control")
LOG = os.path.join(os.environ["CUDA_MPS_LOG_DIRECTORY"], "control.log")


def answers():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(SOCKET)
        return True
    except OSError:
        return False
    finally:
        s.close()


def record(line):
    with open(LOG, "a") as f:
        f.write(line)


def daemon():
    time.sleep(0.2)  # -d has returned: the caller waits until the socket answers
    if os.path.exists(SOCKET):
        os.unlink(SOCKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(SOCKET)
    listener.listen(16)
    record("start %s %s\n" % (os.environ["CUDA_VISIBLE_DEVICES"], PIPE_DIR))
    while True:
        conn, _ = listener.accept()
        data = b""
        while True:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        conn.close()
        for line in data.decode().splitlines(True):
            record(line)
            if line.strip() == "quit":
                os.unlink(SOCKET)
                os._exit(0)


def main():
    if sys.argv[1:] == ["-d"]:
        if answers():
            print("An instance of this daemon is already running", file=sys.stderr)
            return 1
        if os.fork() == 0:
            os.setsid()
            daemon()
        return 0
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(SOCKET)
    except OSError:
        print("Cannot find MPS control daemon process", file=sys.stderr)
        return 1
    s.sendall(sys.stdin.read().encode())
    s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
