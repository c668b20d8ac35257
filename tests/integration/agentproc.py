"""agentproc.py - real gpupool-agent processes (sim backend) beside gpd.Daemon.

The system tests (test_agent_system.py) and the agent benchmark
(bench/agent/run) start the real agent exactly as docs/agent.md and `make
demo` do:

    gpupool-agent run --server URL --join-token-file F --backend sim
                      --node-file NODES [--node NAME]... --state-dir DIR ...

Jobs in these tests run small `sh -c` scripts that append one line per
start to $GPUPOOL_CHECKPOINT_DIR/starts ("REPLICA RESTART PID PEERS"), so
a test counts starts (nothing started twice) from the processes
themselves, and cleanup can end every replica by its pid even when an
agent was killed with -9 (replicas outlive their agent by design).
Python standard library only.
"""
import glob
import json
import os
import signal
import subprocess
import time

import gpd

# One line per start, then run until SIGTERM (exit 0) or until the file
# $GPUPOOL_CHECKPOINT_DIR/release exists (exit 0): what most tests run.
STARTS_THEN_WAIT = (
    'echo "$GPUPOOL_REPLICA $GPUPOOL_RESTART_COUNT $$ $GPUPOOL_PEERS" >> "$GPUPOOL_CHECKPOINT_DIR/starts"; '
    'trap "exit 0" TERM; '
    'while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/release" ]; do sleep 0.1; done')


def write_node_file(directory, nodes):
    """nodes: list of node-file entries (dicts); returns the file's path (JSON is valid YAML)."""
    path = os.path.join(directory, "nodes.yaml")
    with open(path, "w") as f:
        json.dump({"nodes": nodes}, f)
    return path


def sim_nodes(prefix, count, gpus=2, gpu_type="H100", block="blk-a", **extra):
    return [dict({"name": "%s-%d" % (prefix, i), "gpu_type": gpu_type, "gpus": gpus, "block": block,
                  "gpu_mem_mib": 81920, "cpu_millis": 64000, "mem_mib": 262144}, **extra) for i in range(count)]


def join_token(d, ttl="1h"):
    return d.cli("token", "create", "--name", "agents", "--role", "join", "--nodes", "*", "--ttl", ttl,
                 json_out=True)["token"]


class Agent(gpd.Process):
    """One `gpupool-agent run` process driving some nodes of a node file."""

    def __init__(self, d, node_file, nodes=(), extra=(), join=None, state_dir=None, name="agent"):
        self.d, self.node_file, self.nodes, self.extra = d, node_file, list(nodes), list(extra)
        self.state_dir = state_dir or os.path.join(d.dir, name)
        self.log = os.path.join(d.dir, name + ".log")
        self.token_file = os.path.join(d.dir, name + ".join")
        self.join = join
        self.proc = None

    def command(self):
        cmd = [os.path.join(gpd.BIN, "gpupool-agent"), "run", "--server", self.d.url,
               "--join-token-file", self.token_file, "--backend", "sim", "--node-file", self.node_file,
               "--state-dir", self.state_dir, "--on-exit", "stop"]
        for n in self.nodes:
            cmd += ["--node", n]
        return cmd + self.extra

    def start(self):
        # A root agent runs jobs that name no user as nobody: they must reach their working
        # folder and checkpoint folder under the test's (mkdtemp, 0700) directory.
        os.chmod(self.d.dir, 0o755)
        if self.join is None:
            self.join = join_token(self.d)
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (self.join + "\n").encode())
        os.close(fd)
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(self.command(), stdout=logf, stderr=logf)
        logf.close()
        return self

    def wait_up(self, names, timeout=30):
        """Until gpupoold has every named node up; fails at once, with the agent's log, if it exited."""
        def up():
            if self.proc.poll() is not None:
                raise AssertionError("the agent exited with %d:\n%s" % (self.proc.returncode, self.read_log()))
            if len(names) > 100:
                time.sleep(2)  # a big fleet's node list is megabytes: ask less often
            return nodes_up(self.d, names)
        gpd.wait_for(up, timeout, "nodes %s up" % ", ".join(names))

    def stop(self, timeout=20):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill9()

    def replica_logs(self, job_id, replica=0):
        """The log files of a replica's runs, oldest first."""
        return sorted(glob.glob(os.path.join(self.state_dir, "*", "logs", "job%d-r%d-*.log" % (job_id, replica))))

    def checkpoint_dir(self, job_id):
        return os.path.join(self.state_dir, "checkpoints", "job%d" % job_id)

    def starts(self, job_id):
        """The lines the job's replicas appended at start: (replica, restart, pid, peers)."""
        try:
            with open(os.path.join(self.checkpoint_dir(job_id), "starts")) as f:
                rows = [line.split() for line in f if line.strip()]
        except OSError:
            return []
        return [(int(r[0]), int(r[1]), int(r[2]), r[3] if len(r) > 3 else "") for r in rows]

    def release(self, job_id):
        open(os.path.join(self.checkpoint_dir(job_id), "release"), "w").close()


def nodes_up(d, names):
    view = d.ok("GET", "/v1/nodes")
    up = {n["name"] for n in view["nodes"] if n["up"]}
    return set(names) <= up


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def end_replicas(agents, job_ids):
    """Cleanup: SIGKILL each recorded replica's process group (its own session) that still lives."""
    for a in agents:
        for job_id in job_ids:
            for _, _, pid, _ in a.starts(job_id):
                if alive(pid):
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        pass


def wait_gone(pid, timeout=20):
    gpd.wait_for(lambda: not alive(pid), timeout, "process %d to end" % pid)


def wait_state(d, job_id, states, timeout=30):
    states = (states,) if isinstance(states, str) else states
    return gpd.wait_for(lambda: (lambda j: j if j["state"] in states else None)(d.ok("GET", "/v1/jobs/%d" % job_id)),
                        timeout, "job %d %s" % (job_id, "/".join(states)))


def submit(d, tenant="t", command=STARTS_THEN_WAIT, **spec):
    body = dict({"tenant": tenant, "gpus": 1, "checkpoint_grace_s": 2, "command": ["sh", "-c", command]}, **spec)
    return d.ok("POST", "/v1/jobs", body)["id"]


def now_ms():
    return int(time.time() * 1000)
