#!/usr/bin/env python3
"""`gpupool-agent run` against a real gpupoold, with real processes.

One agent process drives sim nodes (T4 GPUs, a type the --fleet file does
not have, so T4 jobs land only on agent nodes) and runs what gpupoold
assigns through its supervisor and the launcher; the jobs are small
python3 programs that print their environment or wait for SIGTERM.

Behaviours under test:
  - a 2-replica gang spans two nodes; each replica sees the right
    environment (rank, world, peers, master, GPUs, checkpoint dir) and the
    gang succeeds once both exited 0;
  - preemption: the victim is signalled (SIGTERM), keeps its grace, and is
    killed when it ends; touching $GPUPOOL_CHECKPOINT_DIR/.done ends the
    grace early and the reclaimer starts long before it;
  - a job bound again after a preemption finds its checkpoint folder without
    a .done an earlier run left unseen (one killed just after checkpointing),
    which would end the new run's first grace at once;
  - the replicas' output reaches `gpupool logs` (once gpupoold has the
    logs endpoint, issue 13 part B; skipped before), and a run that ended
    is forgotten once gpupoold has its exit and its log;
  - a job past its time limit is signalled, killed after its grace, and
    ends with reason time_limit; a replica whose supervisor dies is killed
    and its end reported (signal 9);
  - on https, the agent trusts the server only through its --cacert: with
    another CA's certificate it refuses the server and registers nothing;
  - kill -9 of the agent: its replicas keep running and the agent that
    starts again adopts them (nothing started twice) and reports their
    exits; a node silent past --node-lost-after has its job requeued onto
    the other node, and what the returning agent still runs is killed.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402

AGENT = os.path.join(gpd.BIN, "gpupool-agent")

NODES = """\
nodes:
  - name: t4
    count: 2
    block: blk-t
    gpu_type: T4
    gpus: 2
    gpu_mem_mib: 16384
"""

PRINT_ENV = ("import os, json; print('ENV ' + json.dumps({k: v for k, v in os.environ.items() "
             "if k.startswith(('GPUPOOL_', 'MASTER_', 'NNODES', 'NODE_RANK', 'WORLD_SIZE', 'RANK', 'LOCAL_RANK', 'CUDA_', 'SEED'))}))")

# Waits for SIGTERM; then, with CKPT=1, checkpoints (touches .done) and waits to be killed.
WAIT_TERM = """
import os, signal, sys, time
print('START', os.environ['GPUPOOL_RESTART_COUNT'], flush=True)
def term(sig, frame):
    print('TERM', flush=True)
    if os.environ.get('CKPT') == '1':
        open(os.path.join(os.environ['GPUPOOL_CHECKPOINT_DIR'], '.done'), 'w').close()
        while True:
            time.sleep(1)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
while True:
    time.sleep(0.1)
"""


# Counts its runs in its checkpoint folder and says whether a .done is there
# when it starts; the first run waits for SIGTERM, the second ends at once.
RERUN = """
import os, signal, sys, time
ckpt = os.environ['GPUPOOL_CHECKPOINT_DIR']
runs = os.path.join(ckpt, 'runs')
n = (int(open(runs).read()) if os.path.exists(runs) else 0) + 1
open(runs, 'w').write(str(n))
print('START %d done=%s' % (n, os.path.exists(os.path.join(ckpt, '.done'))), flush=True)
signal.signal(signal.SIGTERM, lambda sig, frame: sys.exit(0))
while n == 1:
    time.sleep(0.1)
"""

class Agent:
    """A gpupool-agent run process over the sim node file."""

    def __init__(self, d, work, join, nodes=None, extra=()):
        self.d, self.work, self.join, self.nodes, self.extra = d, work, join, nodes, list(extra)
        self.node_file = os.path.join(work, "nodes.yaml")
        if not os.path.exists(self.node_file):
            with open(self.node_file, "w") as f:
                f.write(NODES)
        self.state = os.path.join(work, "state")
        self.log = os.path.join(work, "agent.log")
        self.proc = None

    def start(self):
        token_file = os.path.join(self.work, "join.token")
        with open(token_file, "w") as f:
            f.write(self.join + "\n")
        args = [AGENT, "run", "--server", self.d.url, "--join-token-file", token_file, "--backend", "sim",
                "--node-file", self.node_file, "--state-dir", self.state, "--no-cgroups",
                "--heartbeat-s", "1"] + self.extra
        for n in self.nodes or []:
            args += ["--node", n]
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(args, stdout=logf, stderr=logf)
        logf.close()
        return self

    def wait_registered(self, d):
        for n in self.nodes or ["t4-0", "t4-1"]:
            gpd.wait_for(lambda: d.call("GET", "/v1/nodes/" + n)[0] == 200, what="node %s registered" % n)
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)

    def kill_replicas(self):
        """What an agent killed with -9 left running (tests clean up after themselves)."""
        for path in glob.glob(os.path.join(self.state, "*", "replicas", "*", "pid")):
            try:
                with open(path) as f:
                    os.killpg(int(f.read()), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    def read_log(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def replica_logs(self, job_id):
        out = {}
        for path in glob.glob(os.path.join(self.state, "*", "logs", "job%d-r*.log" % job_id)):
            with open(path, errors="replace") as f:
                out[os.path.basename(path)] = f.read()
        return out


def join_token(d):
    return d.cli("token", "create", "--name", "rack1", "--role", "join", "--nodes", "*", "--ttl", "1h",
                 json_out=True)["token"]


def submit(d, command, tenant="t", replicas=1, gpus=1, grace=30, **extra):
    body = dict({"tenant": tenant, "replicas": replicas, "gpus": gpus, "gpu_types": ["T4"],
                 "checkpoint_grace_s": grace, "command": command}, **extra)
    return d.ok("POST", "/v1/jobs", body)["id"]


def job(d, job_id):
    return d.ok("GET", "/v1/jobs/%d" % job_id)


def state_is(d, job_id, *states):
    return job(d, job_id)["state"] in states


def lines(text, prefix):
    return [line[len(prefix):] for line in text.splitlines() if line.startswith(prefix)]


class running_agent:
    """An agent in a fresh folder for the length of a with block (killing its
    replicas with --on-exit stop), its log shown when the block fails."""

    def __init__(self, d, node_file_text=NODES, nodes=None):
        self.d, self.text, self.nodes = d, node_file_text, nodes

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="gpupool-agent-")
        os.chmod(self.work, 0o755)  # a root agent runs jobs as nobody
        with open(os.path.join(self.work, "nodes.yaml"), "w") as f:
            f.write(self.text)
        self.agent = Agent(self.d, self.work, join_token(self.d), nodes=self.nodes, extra=["--on-exit", "stop"])
        return self.agent.start().wait_registered(self.d)

    def __exit__(self, kind, value, tb):
        if kind is not None:
            sys.stderr.write("---- agent log ----\n" + self.agent.read_log()[-6000:])
        self.agent.stop()
        subprocess.run(["rm", "-rf", self.work])


def with_agent(test):
    """Runs test(d, agent) with an agent on both sim nodes."""
    def wrapped(d):
        with running_agent(d) as a:
            test(d, a)
    wrapped.__name__ = test.__name__
    return wrapped


@with_agent
def test_a_two_replica_gang_spans_two_nodes_with_the_right_environment(d, a):
    d.ok("PUT", "/v1/tenants/t", {})
    job_id = submit(d, ["python3", "-c", PRINT_ENV], replicas=2, gpus=2, env={"SEED": "7"})
    gpd.wait_for(lambda: state_is(d, job_id, "succeeded", "failed"), timeout=30, what="the gang to end")
    view = job(d, job_id)
    assert view["state"] == "succeeded", (view["state"], view["history"])
    logs = a.replica_logs(job_id)
    assert len(logs) == 2, logs
    envs = sorted((json.loads(lines(text, "ENV ")[0]) for text in logs.values()),
                  key=lambda e: e["GPUPOOL_REPLICA"])
    peers = envs[0]["GPUPOOL_PEERS"].split(",")
    assert sorted(peers) == ["t4-0", "t4-1"], peers
    for rank, env in enumerate(envs):
        assert env["GPUPOOL_REPLICA"] == env["NODE_RANK"] == env["RANK"] == str(rank) and env["LOCAL_RANK"] == "0", env
        assert env["GPUPOOL_REPLICAS"] == env["WORLD_SIZE"] == env["NNODES"] == "2", env
        assert env["GPUPOOL_JOB_ID"] == str(job_id) and env["GPUPOOL_TENANT"] == "t", env
        assert env["MASTER_ADDR"] == peers[0] and env["MASTER_PORT"] == str(20000 + job_id % 10000), env
        assert env["GPUPOOL_RESTART_COUNT"] == "0" and env["SEED"] == "7", env
        node = peers[rank]
        assert sorted(env["CUDA_VISIBLE_DEVICES"].split(",")) == sorted(
            g["uuid"] for g in d.ok("GET", "/v1/nodes/" + node)["gpus"]), env
        assert env["GPUPOOL_CHECKPOINT_DIR"].endswith("/job%d" % job_id), env
    assert sum(1 for h in view["history"] if h["kind"] == "exit") == 2, view["history"]


@with_agent
def test_preemption_signals_the_victim_and_the_handshake_ends_the_grace(d, a):
    d.ok("PUT", "/v1/tenants/owner", {"guarantee": {"gpu": {"T4": 4}}})
    d.ok("PUT", "/v1/tenants/borrower", {})
    # A victim that exits on SIGTERM, and one that checkpoints and waits to be killed.
    plain = submit(d, ["python3", "-c", WAIT_TERM], tenant="borrower", gpus=2, grace=600)
    ckpt = submit(d, ["python3", "-c", WAIT_TERM], tenant="borrower", gpus=2, grace=600, env={"CKPT": "1"})
    for j in (plain, ckpt):
        gpd.wait_for(lambda: any(lines(t, "START") for t in a.replica_logs(j).values()), timeout=20,
                     what="job %d started" % j)
    t0 = time.time()
    owner = submit(d, ["python3", "-c", WAIT_TERM], tenant="owner", replicas=2, gpus=2, grace=0)
    gpd.wait_for(lambda: state_is(d, owner, "running"), timeout=30, what="the reclaimer running")
    assert time.time() - t0 < 60, "the grace was not ended early"
    gpd.wait_for(lambda: any(lines(t, "START") for t in a.replica_logs(owner).values()), timeout=20,
                 what="the reclaimer's process started")
    for j in (plain, ckpt):
        text = "".join(a.replica_logs(j).values())
        assert lines(text, "TERM"), text
        view = job(d, j)
        assert view["state"] == "pending" and view["preemptions"] == 1, (view["state"], view["history"])
    assert job(d, ckpt).get("last_checkpoint") or "checkpointed" in a.read_log()
    # the reclaimer's replica saw GPUs no victim still held: the victims ended before it started
    log = a.read_log()
    assert "job=%d replica=0 checkpointed" % ckpt in log, log
    # killed by the agent as planned once it checkpointed: its history says so, not killed_after_grace (issue 32)
    exits = gpd.wait_for(lambda: [h for h in job(d, ckpt)["history"] if h["kind"] == "exit"], what="the exit")
    said = json.dumps(job(d, ckpt)["history"])
    assert "killed_after_grace" not in said and "(checkpointed)" in json.dumps(exits), said


@with_agent
def test_a_job_bound_again_starts_without_a_done_its_earlier_run_left(d, a):
    d.ok("PUT", "/v1/tenants/owner", {"guarantee": {"gpu": {"T4": 4}}})
    d.ok("PUT", "/v1/tenants/borrower", {})
    j = submit(d, ["python3", "-c", RERUN], tenant="borrower", gpus=2, grace=600)
    gpd.wait_for(lambda: "START 1 " in "".join(a.replica_logs(j).values()), timeout=20, what="the first run")
    # The reclaimer takes every GPU for 3 s: the first run stops on SIGTERM and is requeued.
    owner = submit(d, ["python3", "-c", "import time; time.sleep(3)"], tenant="owner", replicas=2, gpus=2, grace=0)
    gpd.wait_for(lambda: state_is(d, j, "pending"), timeout=30, what="the first run requeued")
    # What a run killed just after it checkpointed leaves: a .done the agent never saw.
    done = os.path.join(a.state, "checkpoints", "job%d" % j, ".done")
    open(done, "w").close()
    os.utime(done, (time.time() - 60, time.time() - 60))
    gpd.wait_for(lambda: state_is(d, j, "succeeded", "failed"), timeout=60, what="the second run to end")
    text = "".join(a.replica_logs(j).values())
    assert "START 1 done=False" in text and "START 2 done=False" in text, text
    assert state_is(d, owner, "succeeded"), job(d, owner)["history"]


def test_kill9_of_the_agent_adopts_running_replicas_and_a_lost_node_is_requeued(d):
    d.stop()
    d.extra = ["--node-lost-after", "5"]
    d.start()
    d.ok("PUT", "/v1/tenants/t", {})
    work = tempfile.mkdtemp(prefix="gpupool-agent-")
    os.chmod(work, 0o755)  # a root agent runs jobs as nobody
    join = join_token(d)
    a0 = Agent(d, work, join, nodes=["t4-0"]).start()
    os.makedirs(os.path.join(work, "b"))
    a1 = Agent(d, os.path.join(work, "b"), join, nodes=["t4-1"]).start()
    try:
        a0.wait_registered(d)
        a1.wait_registered(d)
        j = submit(d, ["python3", "-c", WAIT_TERM], gpus=2)
        gpd.wait_for(lambda: state_is(d, j, "running"), what="job running")
        first = job(d, j)["placement"][0]["node"]
        holder, other = (a0, a1) if first == "t4-0" else (a1, a0)
        gpd.wait_for(lambda: any(lines(t, "START") for t in holder.replica_logs(j).values()), what="started")
        holder.kill9()
        time.sleep(1)
        holder.start()  # within --node-lost-after: adopts, starts nothing again
        gpd.wait_for(lambda: "adopted" in holder.read_log(), what="adopted")
        time.sleep(2)
        assert len(lines("".join(holder.replica_logs(j).values()), "START")) == 1
        assert state_is(d, j, "running")
        holder.kill9()  # now silent past --node-lost-after: lost, requeued onto the other node
        gpd.wait_for(lambda: job(d, j)["state"] == "running" and job(d, j)["placement"][0]["node"] != first,
                     timeout=30, what="requeued onto the other node")
        gpd.wait_for(lambda: any(lines(t, "START") for t in other.replica_logs(j).values()), what="started again")
        holder.start()  # returns: registers again, kills what it still runs, nothing twice
        # silent past the partition fence (half of --node-lost-after), the run was stopped by its supervisor
        # (no agent ran) and the agent collects its exit; else the agent stops it from STATE/NODE/partition at
        # its start, or the poll's up: false kills it
        gpd.wait_for(lambda: any(w in holder.read_log() for w in ("killed: no longer assigned", "reason=partitioned",
                                                                  "exited reason=")), timeout=30, what="old run killed")
        gpd.wait_for(lambda: not glob.glob(os.path.join(holder.state, "*", "replicas", "job*")), timeout=30,
                     what="the old run's exit sent and forgotten")
        assert state_is(d, j, "running") and job(d, j)["placement"][0]["node"] != first
        assert len(lines("".join(other.replica_logs(j).values()), "START")) == 1
    except BaseException:
        for a in (a0, a1):
            sys.stderr.write("---- agent log %s ----\n%s" % (a.nodes, a.read_log()[-4000:]))
        raise
    finally:
        for a in (a0, a1):
            a.extra = ["--on-exit", "stop"]
            if a.proc.poll() is None:
                a.kill9()
            a.kill_replicas()
        subprocess.run(["rm", "-rf", work])


@with_agent
def test_replica_output_reaches_gpupool_logs_and_the_finished_run_is_forgotten(d, a):
    d.ok("PUT", "/v1/tenants/t", {})
    script = "import time\nfor i in range(3):\n    print('line', i)\n    time.sleep(0.3)"
    j = submit(d, ["python3", "-u", "-c", script], replicas=2, gpus=2)
    gpd.wait_for(lambda: state_is(d, j, "succeeded"), what="the gang to end")
    for r in (0, 1):
        gpd.wait_for(lambda: d.cli("logs", str(j), "--replica", str(r)).stdout == "line 0\nline 1\nline 2\n",
                     what="replica %d's output through gpupool logs" % r)
    gpd.wait_for(lambda: not glob.glob(os.path.join(a.state, "*", "replicas", "job*")),
                 what="the finished runs forgotten once gpupoold had their exits and logs")


def test_output_bursts_larger_than_a_request_body_reach_gpupool_logs_whole(_):
    # 3 MiB written at once, to a gpupoold whose --max-body is 200 kB: the
    # agent's calls are refused 413 until it sends less per call (a call over
    # the limit, re-sent as it was, would be refused forever).
    d = gpd.Daemon(extra=["--max-body", "200000"])
    try:
        d.start()
        with running_agent(d) as a:
            big_output_reaches_gpupool_logs(d, a)
        d.stop()
    finally:
        d.cleanup()


def big_output_reaches_gpupool_logs(d, a):
    d.ok("PUT", "/v1/tenants/t", {})
    script = "import sys\nsys.stdout.write(('x' * 1023 + '\\n') * 3072)"
    j = submit(d, ["python3", "-c", script], replicas=1, gpus=1)
    gpd.wait_for(lambda: state_is(d, j, "succeeded"), what="the job to end")
    gpd.wait_for(lambda: len(d.cli("logs", str(j)).stdout) == 3 * 1024 * 1024, timeout=30,
                 what="all 3 MiB through gpupool logs")
    assert d.cli("logs", str(j)).stdout == ("x" * 1023 + "\n") * 3072


IGNORE_TERM = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('START', flush=True)\n"
               "while True:\n    time.sleep(0.1)")


@with_agent
def test_a_job_past_its_time_limit_is_killed_after_its_grace_with_reason_time_limit(d, a):
    d.ok("PUT", "/v1/tenants/t", {})
    j = submit(d, ["python3", "-c", IGNORE_TERM], grace=1, time_limit_s=1)
    gpd.wait_for(lambda: state_is(d, j, "failed"), timeout=30, what="the job ended by its time limit")
    # gpupoold may end the job at the grace's end before the agent's report of the kill arrives
    gpd.wait_for(lambda: "job=%d replica=0 exited reason=time_limit" % j in a.read_log(), what="killed, time_limit")
    assert "job=%d replica=0 stopping reason=time_limit" % j in a.read_log(), a.read_log()
    assert any("time_limit" in (h.get("reason") or "") for h in job(d, j)["history"]), job(d, j)["history"]


USR1_SAYS = ("import signal, sys, time\n"
             "signal.signal(signal.SIGUSR1, lambda *_: (print('GOT USR1', flush=True), sys.exit(0)))\n"
             "signal.signal(signal.SIGTERM, lambda *_: (print('GOT TERM', flush=True), sys.exit(0)))\n"
             "print('START', flush=True)\n"
             "while True:\n    time.sleep(0.1)")


@with_agent
def test_a_stop_sends_the_jobs_stop_signal(d, a):
    d.ok("PUT", "/v1/tenants/t", {})
    status, out = d.call("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "command": ["true"], "stop_signal": "SIGKILL"})
    assert status == 400 and out["error"]["field"] == "stop_signal", out
    j = submit(d, ["python3", "-c", USR1_SAYS], grace=30, stop_signal="SIGUSR1")
    gpd.wait_for(lambda: any(lines(t, "START") for t in a.replica_logs(j).values()), what="started")
    d.cli("cancel", str(j))
    gpd.wait_for(lambda: state_is(d, j, "cancelled"), timeout=20, what="cancelled within its grace")
    assert lines("".join(a.replica_logs(j).values()), "GOT ") == ["USR1"], a.replica_logs(j)


@with_agent
def test_a_replica_whose_supervisor_dies_is_killed_and_reported(d, a):
    d.ok("PUT", "/v1/tenants/t", {})
    j = submit(d, ["python3", "-c", IGNORE_TERM])
    gpd.wait_for(lambda: any(lines(t, "START") for t in a.replica_logs(j).values()), what="started")
    [run] = glob.glob(os.path.join(a.state, "*", "replicas", "job%d-r0-*" % j))
    with open(os.path.join(run, "supervisor")) as f:
        supervisor = int(f.read().split()[0])
    with open(os.path.join(run, "pid")) as f:
        replica = int(f.read())
    os.kill(supervisor, signal.SIGKILL)
    gpd.wait_for(lambda: state_is(d, j, "failed"), what="the job failed")
    assert "job=%d replica=0 exited reason=signalled code=-1 signal=9" % j in a.read_log(), a.read_log()

    def gone():
        try:
            os.kill(replica, 0)
            with open("/proc/%d/stat" % replica) as f:
                return f.read().split(") ")[1].startswith("Z")  # a zombie is gone too
        except OSError:
            return True
    gpd.wait_for(gone, what="the replica killed")


MIG_NODES = """\
nodes:
  - name: a100m
    gpu_type: A100
    gpus: 1
    gpu_mem_mib: 81920
    sharing: mig
"""


def test_a_mig_slice_runs_on_its_instance_and_a_fault_marks_the_gpu_unhealthy(d):
    d.stop()
    d.fleet = None  # agent nodes only: the A100 job lands on the sim node
    d.start()
    d.ok("PUT", "/v1/tenants/t", {})
    with running_agent(d, MIG_NODES, nodes=["a100m"]) as a:
        command = ["python3", "-u", "-c", PRINT_ENV + "\nimport time; time.sleep(60)"]
        # one request, so one pass places both: two passes a second apart would be two layout changes of
        # the GPU, and the second waits out mig_reconfigure_interval_s (60 s; seen on a loaded machine)
        spec = {"tenant": "t", "gpu_types": ["A100"], "share": {"mig": "1g.10gb"}, "command": command}
        j, k = d.ok("POST", "/v1/jobs:batch", {"jobs": [spec, spec]})["ids"]
        seen = []
        for x in (j, k):  # two instances of the one GPU run side by side
            gpd.wait_for(lambda: "".join(a.replica_logs(x).values()), what="job %d's MIG replica's output" % x)
            seen.append(json.loads(lines("".join(a.replica_logs(x).values()), "ENV ")[0])["CUDA_VISIBLE_DEVICES"])
        assert all(v.startswith("MIG-") for v in seen) and seen[0] != seen[1], seen

        def slice_use():  # the heartbeat's use per job and per slice, as GET /v1/nodes shows it
            running = (d.ok("GET", "/v1/nodes/a100m")["agent"] or {}).get("running") or []
            use = {e["job"]: [g["uuid"] for g in e.get("gpus") or []] for e in running}
            return use if use.get(j) and use.get(k) else None
        use = gpd.wait_for(slice_use, what="each job's use of its slice in a heartbeat")
        assert (use[j], use[k]) == ([seen[0]], [seen[1]]), (use, seen)
        [rep] = job(d, j)["placement"]
        index = [g["uuid"] for g in d.ok("GET", "/v1/nodes/a100m")["gpus"]].index(rep["gpus"][0])
        subprocess.run([AGENT, "fault", "--node-file", a.node_file, "--node", "a100m", "--gpu", str(index),
                        "--xid", "79"], check=True)
        gpd.wait_for(lambda: not d.ok("GET", "/v1/nodes/a100m")["gpus"][index]["healthy"], what="GPU unhealthy")
        gpd.wait_for(lambda: "job=%d replica=0 exited" % j in a.read_log(), what="its replica stopped")
        assert "gpu=%d unhealthy" % index in a.read_log()


@with_agent
def test_an_agent_refuses_a_controller_older_than_the_epoch_it_saw(d, a):
    a.stop()
    for node in ("t4-0", "t4-1"):
        with open(os.path.join(a.state, node, "epoch"), "w") as f:
            f.write("99\n")
    a.start()
    d.ok("PUT", "/v1/tenants/t", {})
    j = submit(d, ["python3", "-c", PRINT_ENV])
    gpd.wait_for(lambda: "refused an answer of epoch 1: epoch 99 was seen" in a.read_log(), what="refused")
    time.sleep(1)
    assert a.proc.poll() is None, "the agent exited"
    assert not a.replica_logs(j) and state_is(d, j, "running"), a.replica_logs(j)


def make_cert(folder, name):
    """A self-signed certificate for 127.0.0.1 and its key, in folder."""
    cert, key = os.path.join(folder, name + ".pem"), os.path.join(folder, name + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def test_an_agent_on_https_trusts_its_cacert_and_refuses_another(d):
    if not shutil.which("openssl"):
        print("     (openssl missing: the agent's TLS not checked)")
        return
    d.stop()
    cert, key = make_cert(d.dir, "server")
    other, _ = make_cert(d.dir, "other")
    tls = gpd.Daemon(workdir=d.dir, extra=["--tls-cert", cert, "--tls-key", key])
    tls.start()
    work = tempfile.mkdtemp(prefix="gpupool-agent-")
    os.chmod(work, 0o755)
    server = type("D", (), {"url": "https://127.0.0.1:%d" % tls.port})

    def cli(*args):
        p = subprocess.run([os.path.join(gpd.BIN, "gpupool"), "--server", server.url, "--cacert", cert,
                            "--token", tls.token] + list(args), capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout
    try:
        join = json.loads(cli("--json", "token", "create", "--name", "rack1", "--role", "join", "--nodes", "*",
                               "--ttl", "1h"))["token"]
        wrong = Agent(server, work, join, nodes=["t4-0"], extra=["--cacert", other]).start()
        gpd.wait_for(lambda: "certificate" in wrong.read_log(), what="the agent refusing the server's certificate")
        wrong.stop()
        assert "t4-0" not in cli("nodes"), cli("nodes")
        right = Agent(server, work, join, nodes=["t4-0"], extra=["--cacert", cert]).start()
        gpd.wait_for(lambda: "t4-0" in cli("nodes"), what="the node registered over https")
        right.stop()
    finally:
        tls.stop()
        shutil.rmtree(work, ignore_errors=True)
    d.start()

def test_exits_reach_a_restarted_gpupoold_through_the_next_url(d):
    d.ok("PUT", "/v1/tenants/t", {})
    with running_agent(d) as a:
        a.stop()
        a.d = type("D", (), {"url": "http://127.0.0.1:1," + d.url})  # the first URL never answers
        a.start()
        a.d = d
        j = submit(d, ["python3", "-c", "import time; print('START', flush=True); time.sleep(2)"])
        gpd.wait_for(lambda: any(lines(t, "START") for t in a.replica_logs(j).values()), what="started")
        port = d.port
        d.kill9()  # the replica ends while gpupoold is away; its exit waits on disk
        time.sleep(3)
        d.extra = ["--listen", "127.0.0.1:%d" % port]
        d.start()
        gpd.wait_for(lambda: state_is(d, j, "succeeded"), timeout=40, what="the exit reported after the restart")
        assert "reconnected" in a.read_log()
        assert len(lines("".join(a.replica_logs(j).values()), "START")) == 1

if __name__ == "__main__":
    gpd.run([test_a_two_replica_gang_spans_two_nodes_with_the_right_environment,
             test_preemption_signals_the_victim_and_the_handshake_ends_the_grace,
             test_a_job_bound_again_starts_without_a_done_its_earlier_run_left,
             test_kill9_of_the_agent_adopts_running_replicas_and_a_lost_node_is_requeued,
             test_a_mig_slice_runs_on_its_instance_and_a_fault_marks_the_gpu_unhealthy,
             test_an_agent_refuses_a_controller_older_than_the_epoch_it_saw,
             test_exits_reach_a_restarted_gpupoold_through_the_next_url,
             test_an_agent_on_https_trusts_its_cacert_and_refuses_another,
             test_replica_output_reaches_gpupool_logs_and_the_finished_run_is_forgotten,
             test_output_bursts_larger_than_a_request_body_reach_gpupool_logs_whole,
             test_a_job_past_its_time_limit_is_killed_after_its_grace_with_reason_time_limit,
             test_a_stop_sends_the_jobs_stop_signal,
             test_a_replica_whose_supervisor_dies_is_killed_and_reported])
