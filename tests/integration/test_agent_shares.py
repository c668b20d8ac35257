#!/usr/bin/env python3
"""Shares made real on the node: the real gpupoold, a real gpupool-agent
(sim backend) and real replica processes on MPS and time-sliced GPUs.

Behaviours under test:
  - two MPS jobs of one org share a GPU through one MPS control daemon
    (a stand-in for nvidia-cuda-mps-control that records what it was given):
    it is started once, with the GPU's UUID and its own pipe and log
    folders; each client sees the pipe folder, its thread percentage and its
    pinned memory limit from its share; dcgm-exporter's job map lists both
    jobs on the GPU;
  - the one whose processes then hold more GPU memory than its share (it
    runs `gpupool-agent fault --pid $$ --memory-mib M`) is killed and fails
    with reason gpu_memory, its history saying what it used and its share;
    the other keeps running; after the last MPS replica ended the daemon is
    quit and the job map is empty;
  - a time-sliced job over its share is stopped the same way, and sees no
    MPS variables.

gpupoold runs without --fleet (every node is the agent's); the agents run
with --no-cgroups (the watch maps a GPU process to its replica through its
ancestry).  Jobs run as their own uid under a root agent, so the fault
file they append to is world-writable, and the agent binary they run is a
0755 copy in the test's own folder (the checkout may be a 0700 folder such
as /root that the job's uid cannot reach).
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, alive, end_replicas, submit, wait_state, write_node_file  # noqa: E402

DAEMON = {"fleet": None}
GPU_MEM = 81920
AGENT_BIN = os.path.join(gpd.BIN, "gpupool-agent")

# nvidia-cuda-mps-control as the real one behaves (tests/support/mps_control_stand_in.py):
# `-d` starts a daemon listening on the UNIX socket PIPE/control and returns before it
# listens; as a client it sends its stdin there.  The daemon records its start (with the
# variables it was given) and each command in LOG/control.log, and ends at `quit`.
STAND_IN = os.path.join(gpd.ROOT, "tests", "support", "mps_control_stand_in.py")

# The job: its CUDA variables to $GPUPOOL_CHECKPOINT_DIR/env, its pid to .../pid;
# once .../grow exists it "allocates" MEMORY MiB on GPU 0 (a sim memory line with
# its own pid); it ends when .../release exists.
JOB = ('env | grep ^CUDA_ | sort > "$GPUPOOL_CHECKPOINT_DIR/env"; echo $$ > "$GPUPOOL_CHECKPOINT_DIR/pid"; '
       'while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/grow" ]; do '
       '  [ -e "$GPUPOOL_CHECKPOINT_DIR/release" ] && exit 0; sleep 0.1; done; '
       '%s fault --node-file %s --fault-file %s --node %s --gpu 0 --pid $$ --memory-mib %d; '
       'while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/release" ]; do sleep 0.1; done')


def start(d, node, sharing, extra=()):
    node_file = write_node_file(d.dir, [{"name": node, "gpu_type": "H100", "gpus": 1, "gpu_mem_mib": GPU_MEM,
                                         "cpu_millis": 64000, "mem_mib": 262144, "block": "blk-a",
                                         "sharing": sharing}])
    faults = os.path.join(d.dir, "faults")
    open(faults, "w").close()
    os.chmod(faults, 0o666)
    a = Agent(d, node_file, nodes=[node], extra=["--no-cgroups", "--fault-file", faults] + list(extra)).start()
    a.wait_up([node])
    d.ok("PUT", "/v1/tenants/t", {})
    return a, faults


def reachable_agent_bin(d):
    """gpupool-agent copied where the job's uid can run it: d.dir (0755) / bin (0755)."""
    path = os.path.join(d.dir, "bin", "gpupool-agent")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.chmod(os.path.dirname(path), 0o755)
        shutil.copy(AGENT_BIN, path)
        os.chmod(path, 0o755)
    return path


def job(d, a, faults, node, memory_mib, **spec):
    return submit(d, command=JOB % (reachable_agent_bin(d), a.node_file, faults, node, memory_mib), **spec)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def env_of(a, job_id):
    text = gpd.wait_for(lambda: read(os.path.join(a.checkpoint_dir(job_id), "env")), 20, "job %d's env" % job_id)
    return dict(line.split("=", 1) for line in text.splitlines())


def pid_of(a, job_id):
    return int(gpd.wait_for(lambda: read(os.path.join(a.checkpoint_dir(job_id), "pid")).strip(), 20, "pid"))


def touch(a, job_id, name):
    open(os.path.join(a.checkpoint_dir(job_id), name), "w").close()


def exit_rows(d, job_id):
    return [h for h in d.ok("GET", "/v1/jobs/%d" % job_id)["history"] if h.get("kind") == "exit"]


def assert_stopped_for_its_memory(d, job_id, used, share):
    view = wait_state(d, job_id, "failed", 30)
    rows = exit_rows(d, job_id)
    assert any("gpu_memory" in json.dumps(r) and "used %d MiB" % used in json.dumps(r)
               and "its share is %d MiB" % share in json.dumps(r) for r in rows), (rows, view["history"])


def test_mps_jobs_share_one_daemon_and_one_over_its_share_is_stopped(d):
    control = STAND_IN
    dcgm = os.path.join(d.dir, "dcgm")
    a, faults = start(d, "mps-0", "mps", ["--mps-control", control, "--dcgm-job-map", dcgm])
    jobs = []
    try:
        big = job(d, a, faults, "mps-0", 1000, share={"mps": 50})
        small = job(d, a, faults, "mps-0", 30000, share={"mps": 25})
        jobs = [big, small]
        env_big, env_small = env_of(a, big), env_of(a, small)
        uuid = d.ok("GET", "/v1/nodes/mps-0")["gpus"][0]["uuid"]
        key = uuid.rsplit("-", 1)[-1][:12]  # the UUID's last group names the folders
        pipe = os.path.join(a.state_dir, "mps-0", "mps", key, "pipe")
        log = os.path.join(a.state_dir, "mps-0", "mps", key, "log", "control.log")
        assert read(log) == "start %s %s\n" % (uuid, pipe), read(log)  # one daemon, its own folders
        for e, pct, mib in ((env_big, "50", 40960), (env_small, "25", 20480)):
            assert e["CUDA_VISIBLE_DEVICES"] == uuid, e
            assert e["CUDA_MPS_PIPE_DIRECTORY"] == pipe, e
            assert e["CUDA_MPS_LOG_DIRECTORY"] == os.path.dirname(log), e
            assert e["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == pct, e
            assert e["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=%dM" % mib, e
        gpd.wait_for(lambda: sorted(read(os.path.join(dcgm, "0")).split()) == sorted([str(big), str(small)]), 10,
                     "both jobs in the dcgm job map")
        big_pid = pid_of(a, big)
        touch(a, big, "grow")  # 1000 MiB: within its 40960
        touch(a, small, "grow")  # 30000 MiB: over its 20480
        assert_stopped_for_its_memory(d, small, 30000, 20480)
        assert alive(big_pid) and d.ok("GET", "/v1/jobs/%d" % big)["state"] == "running"
        assert read(log).count("start") == 1 and "quit" not in read(log), read(log)  # still in use
        gpd.wait_for(lambda: read(os.path.join(dcgm, "0")).split() == [str(big)], 10, "only the big job mapped")
        touch(a, big, "release")
        wait_state(d, big, "succeeded", 20)
        gpd.wait_for(lambda: read(log).endswith("quit\n"), 10, "the daemon quit after the last MPS replica")
        gpd.wait_for(lambda: read(os.path.join(dcgm, "0")) == "", 10, "an empty job map")
    finally:
        a.stop()
        for j in jobs:
            pid = read(os.path.join(a.checkpoint_dir(j), "pid")).strip()
            if pid and alive(int(pid)):
                os.killpg(int(pid), 9)
        end_replicas([a], jobs)


def test_a_time_sliced_job_over_its_share_is_stopped(d):
    a, faults = start(d, "ts-0", "timeslice")
    jobs = []
    try:
        j = job(d, a, faults, "ts-0", 30000, share={"timeslice": True}, kind="interactive")
        jobs = [j]
        placement = wait_state(d, j, "running")["placement"]
        milli = placement[0]["slice"]["milli_gpus"]
        e = env_of(a, j)
        assert not any(k.startswith("CUDA_MPS_") for k in e), e
        touch(a, j, "grow")
        assert_stopped_for_its_memory(d, j, 30000, milli * GPU_MEM // 1000)
    finally:
        a.stop()
        end_replicas([a], jobs)


def test_the_dcgm_job_map_needs_one_node(d):
    node_file = write_node_file(d.dir, [{"name": "m-%d" % i, "gpu_type": "H100", "gpus": 1, "block": "b"}
                                        for i in range(2)])
    p = subprocess.run([AGENT_BIN, "run", "--server", d.url, "--backend", "sim",
                        "--node-file", node_file, "--state-dir", os.path.join(d.dir, "st"), "--dcgm-job-map",
                        os.path.join(d.dir, "map")], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, GPUPOOL_JOIN_TOKEN="x"))
    assert p.returncode == 2 and "--dcgm-job-map" in p.stderr, (p.returncode, p.stderr)


if __name__ == "__main__":
    gpd.run([
        test_mps_jobs_share_one_daemon_and_one_over_its_share_is_stopped,
        test_a_time_sliced_job_over_its_share_is_stopped,
        test_the_dcgm_job_map_needs_one_node,
    ], **DAEMON)
