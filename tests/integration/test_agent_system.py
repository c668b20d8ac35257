#!/usr/bin/env python3
"""The whole system on loopback: the real gpupoold, real gpupool-agent
processes (sim backend, several nodes each) and real replica processes.

Behaviours under test:
  - an injected GPU fault (XID 79) marks the GPU unhealthy and requeues
    its job with the gang whole: the healthy replica is stopped too, and
    the gang comes back on healthy GPUs only;
  - gpupoold killed with -9 under running jobs: the replicas keep running,
    and after its restart nothing is started twice (the replicas count
    their own starts) and nothing is lost (an exit that happened while it
    was down still ends its job, the other jobs finish);
  - a replica over its memory limit fails its job with reason oom (root
    and a memory cgroup; skipped otherwise);
  - a replica can open its own GPU's device node but not another GPU's
    with the agent's default flags (stand-in nodes made with mknod; root
    only);
  - an agent given a bad or an expired join token exits with the 401
    message;
  - gpupoold serves a request while more than 1,024 connections are open
    (thousands of agents hold a long-poll each).

gpupoold runs without --fleet (every node is an agent's) and with a short
--node-lost-after (15 s: agents heartbeat every 3 s).  The agents run with
--no-cgroups except where a test needs cgroups.
"""
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402
from agentproc import Agent, alive, end_replicas, sim_nodes, submit, wait_state, write_node_file  # noqa: E402

# --node-lost-after 15 (heartbeats every 3 s): the agent's retry back-off is capped at the heartbeat
# period, so a restarted gpupoold does not find a node lost only because its agent was waiting.
DAEMON = {"fleet": None, "extra": ["--node-lost-after", "15", "--max-connections", "2000"]}


def start_agent(d, nodes, extra=("--no-cgroups",), **kw):
    node_file = write_node_file(d.dir, nodes)
    a = Agent(d, node_file, extra=list(extra), **kw).start()
    a.wait_up([n["name"] for n in nodes])
    d.ok("PUT", "/v1/tenants/t", {})
    return a


def gpu_index(d, node, uuid):
    view = d.ok("GET", "/v1/nodes/%s" % node)
    return next(g["index"] for g in view["gpus"] if g["uuid"] == uuid)


def test_an_injected_fault_marks_the_gpu_unhealthy_and_requeues_the_gang_whole(d):
    nodes = sim_nodes("n", 3, gpus=1)
    a = start_agent(d, nodes)
    job_id = None
    try:
        job_id = submit(d, replicas=2)
        gpd.wait_for(lambda: len(a.starts(job_id)) == 2, what="both replicas started")
        first = wait_state(d, job_id, "running")["placement"]
        faulty = first[0]["node"]
        other_pid = next(pid for r, _, pid, _ in a.starts(job_id) if r == 1)
        index = gpu_index(d, faulty, first[0]["gpus"][0])
        cli = [os.path.join(gpd.BIN, "gpupool-agent"), "fault", "--node-file", a.node_file, "--node", faulty,
               "--gpu", str(index), "--xid", "79"]
        subprocess.run(cli, check=True, capture_output=True, timeout=10)
        gpd.wait_for(lambda: not d.ok("GET", "/v1/nodes/%s" % faulty)["gpus"][index]["healthy"], 15,
                     "GPU %d of %s unhealthy" % (index, faulty))
        gpd.wait_for(lambda: len(a.starts(job_id)) == 4, 20, "the gang started again")
        agentproc.wait_gone(other_pid)  # the healthy replica was stopped with its gang
        view = wait_state(d, job_id, "running")
        assert faulty not in [p["node"] for p in view["placement"]], view["placement"]
        starts = a.starts(job_id)
        assert sorted(r for r, _, _, _ in starts) == [0, 0, 1, 1], starts
        assert all(faulty not in peers.split(",") for _, _, _, peers in starts[2:]), starts
        assert any(h["kind"] == "transition" and h["to"] == "pending" and "unhealthy" in h["reason"]
                   for h in view["history"]), view["history"]
        time.sleep(1.5)  # a few more heartbeats and polls: still no third start
        assert len(a.starts(job_id)) == 4, a.starts(job_id)
    finally:
        a.stop()
        end_replicas([a], [job_id] if job_id else [])


def restart_on_same_port(d):
    port = d.port
    d.extra = [x for x in d.extra] + ["--listen", "127.0.0.1:%d" % port]
    d.start()
    assert d.port == port


def test_gpupoold_killed_under_running_jobs_starts_nothing_twice_and_loses_nothing(d):
    nodes = sim_nodes("n", 2, gpus=2)
    a = start_agent(d, nodes)
    jobs = []
    try:
        jobs = [submit(d, replicas=2), submit(d), submit(d)]
        for j in jobs:
            gpd.wait_for(lambda: len(a.starts(j)) == d.ok("GET", "/v1/jobs/%d" % j)["replicas"], 20,
                         "job %d started" % j)
        pids = {j: [pid for _, _, pid, _ in a.starts(j)] for j in jobs}
        d.kill9()
        # While gpupoold is down: the work goes on, and one job ends.
        early = jobs[1]
        a.release(early)
        agentproc.wait_gone(pids[early][0])
        assert all(alive(p) for j in (jobs[0], jobs[2]) for p in pids[j])
        time.sleep(1)  # the agent retries with back-off meanwhile
        restart_on_same_port(d)
        wait_state(d, early, "succeeded", timeout=30)  # its exit report was kept and re-sent
        time.sleep(2)  # polls answered by the new epoch, reconcile done
        for j in jobs:
            assert len(a.starts(j)) == len(pids[j]), (j, a.starts(j))
        assert all(alive(p) for j in (jobs[0], jobs[2]) for p in pids[j])
        assert d.ok("GET", "/v1/jobs/%d" % jobs[0])["state"] == "running"
        for j in (jobs[0], jobs[2]):
            a.release(j)
            wait_state(d, j, "succeeded", timeout=30)
        later = submit(d)
        gpd.wait_for(lambda: len(a.starts(later)) == 1, 20, "a job submitted after the restart started")
        jobs.append(later)
    finally:
        a.stop()
        end_replicas([a], jobs)


def memory_cgroup():
    """Root and a memory controller (v1 folder, or v2 with memory in its controllers)."""
    if os.geteuid() != 0:
        return False
    if os.path.isdir("/sys/fs/cgroup/memory"):
        return True
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            return "memory" in f.read().split()
    except OSError:
        return False


def test_a_replica_over_its_memory_limit_fails_with_oom(d):
    if not memory_cgroup():
        print("skip: needs root and a memory cgroup")
        return
    parent = "gpupool-test-%d" % os.getpid()
    a = start_agent(d, sim_nodes("n", 1, gpus=1), extra=["--cgroup-parent", parent])
    try:
        hog = "import time; b = b'x' * (400 << 20); time.sleep(30)"
        job_id = submit(d, command='exec python3 -c "%s"' % hog, mem_mib=64)
        view = wait_state(d, job_id, ("failed", "succeeded"), timeout=30)
        assert view["state"] == "failed", view
        reasons = " ".join((h.get("reason") or "") for h in view["history"])
        assert "oom" in reasons, view["history"]
    finally:
        a.stop()


def make_device_dir(directory, gpus):
    """Stand-in GPU device nodes, 0666 as the driver makes them: nvidiaN = c 195 N,
    nvidiactl = c 195 255, nvidia-uvm = c 511 0."""
    os.makedirs(os.path.join(directory, "nvidia-caps"), exist_ok=True)
    nodes = [("nvidia%d" % i, 195, i) for i in range(gpus)] + [("nvidiactl", 195, 255), ("nvidia-uvm", 511, 0)]
    for name, major, minor in nodes:
        path = os.path.join(directory, name)
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
        os.chmod(path, 0o666)  # past the umask


# Tries every stand-in GPU node and prints "nvidiaN ok|EPERM|<other errno>".
OPEN_EACH = r'''
import errno, os, sys
for i in range(int(sys.argv[2])):
    p = os.path.join(sys.argv[1], "nvidia%d" % i)
    try:
        os.close(os.open(p, os.O_RDWR)); r = "ok"
    except OSError as e:
        r = "EPERM" if e.errno == errno.EPERM else errno.errorcode.get(e.errno, str(e.errno))
    print("nvidia%d %s" % (i, r), flush=True)
print("visible " + os.environ["CUDA_VISIBLE_DEVICES"], flush=True)
'''


def test_a_replica_cannot_open_another_gpus_device_node_with_default_flags(d):
    if os.geteuid() != 0 or not os.path.isdir("/sys/fs/cgroup/devices") and not memory_cgroup():
        print("skip: needs root and cgroups")
        return
    devdir = tempfile.mkdtemp(prefix="gpupool-dev-")
    os.chmod(devdir, 0o755)  # the replica runs as its job's own uid
    a = None
    try:
        make_device_dir(devdir, 2)
        nodes = sim_nodes("n", 1, gpus=2, device_dir=devdir)
        a = start_agent(d, nodes, extra=["--cgroup-parent", "gpupool-test-%d" % os.getpid(), "--device-dir", devdir])
        script = os.path.join(d.dir, "open_each.py")
        with open(script, "w") as f:
            f.write(OPEN_EACH)
        job_id = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "command": ["python3", script, devdir, "2"]})["id"]
        view = wait_state(d, job_id, ("succeeded", "failed"), timeout=30)
        assert view["state"] == "succeeded", view
        gpd.wait_for(lambda: a.replica_logs(job_id), 10, "the replica's log")
        with open(a.replica_logs(job_id)[-1]) as f:
            lines = dict(line.split(None, 1) for line in f.read().splitlines() if " " in line)
        inventory = json.loads(subprocess.run(
            [os.path.join(gpd.BIN, "gpupool-agent"), "inventory", "--backend", "sim", "--node-file", a.node_file],
            check=True, capture_output=True, text=True, timeout=10).stdout)
        mine = next(g["index"] for g in inventory["gpus"] if g["uuid"] == lines["visible"].strip())
        other = 1 - mine
        assert lines["nvidia%d" % mine].strip() != "EPERM", lines
        assert lines["nvidia%d" % other].strip() == "EPERM", lines
    finally:
        if a:
            a.stop()
        shutil.rmtree(devdir, ignore_errors=True)


def agent_exit(d, join):
    a = Agent(d, write_node_file(d.dir, sim_nodes("n", 1)), extra=["--no-cgroups"], join=join).start()
    try:
        a.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        a.kill9()
        raise AssertionError("the agent did not exit on a refused join token:\n" + a.read_log(tail=None))
    return a.proc.returncode, a.read_log(tail=None)


def test_an_agent_with_a_bad_or_expired_join_token_exits_with_the_401_message(d):
    code, log = agent_exit(d, "gpt_" + "0" * 64)
    assert code != 0 and "401" in log and "unknown or revoked token" in log, (code, log)
    short = agentproc.join_token(d, ttl="1s")
    time.sleep(2.1)
    code, log = agent_exit(d, short)
    assert code != 0 and "401" in log and "expired" in log, (code, log)
    assert not d.ok("GET", "/v1/nodes")["nodes"], "a refused agent registered a node"


def test_gpupoold_holds_more_than_1024_connections_at_once(d):
    """Every agent holds a long-poll open: socket numbers past select(2)'s FD_SETSIZE must work."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1400:
        print("skip: the open-files limit (%d) is below 1400" % hard)
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1400) if hard == resource.RLIM_INFINITY else min(hard, 4096), hard))
    d.stop()
    d.start()  # again, with this limit
    held = []
    try:
        for _ in range(1100):
            held.append(socket.create_connection(("127.0.0.1", d.port), timeout=10))
        status, out = d.call("GET", "/v1/health", token="")
        assert status == 200, (status, out)
    finally:
        for s in held:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


if __name__ == "__main__":
    gpd.run([
        test_an_injected_fault_marks_the_gpu_unhealthy_and_requeues_the_gang_whole,
        test_gpupoold_killed_under_running_jobs_starts_nothing_twice_and_loses_nothing,
        test_a_replica_over_its_memory_limit_fails_with_oom,
        test_a_replica_cannot_open_another_gpus_device_node_with_default_flags,
        test_an_agent_with_a_bad_or_expired_join_token_exits_with_the_401_message,
        test_gpupoold_holds_more_than_1024_connections_at_once,
    ], **DAEMON)
