#!/usr/bin/env python3
"""The node boundary as a hostile tenant tries it (issue 29): the real
gpupoold, a real root gpupool-agent (sim backend, cgroups) and real
replicas probing from inside.

Behaviours under test:
  - a replica asked to run as root (or as a system user) is refused on
    the node, with the reason in its error and its log; an untrusted
    tenant's replica is refused by an agent that does not isolate devices
    (both through the supervisor with a crafted launch.json: gpupoold
    may refuse such a job before the node sees it);
  - two jobs that name no user, of different tenants, run as different
    per-job uids and cannot read each other's /proc/PID/environ nor
    signal each other;
  - a checkpoint folder is 0700 and the job's, under a 0711 root;
  - a file a job plants in /tmp (or /var/tmp, /dev/shm) is not visible to
    another job, and its /tmp and working folder are gone once it ended,
    also when the agent was killed with -9 meanwhile (the next agent
    adopted it); with --keep-scratch-s they stay that long, then a sweep
    removes them;
  - a job forking 2,000 processes is refused by pids.max (the default);
    a job that sets no limits gets its GPUs' share of the node's CPU and
    memory, and pids.max 1024;
  - a job printing 64 MiB leaves a log of at most --log-max-mib on the
    node, its newest lines kept, the drop said in the log gpupoold has;
  - a replica has NoNewPrivs: 1.

Root and cgroups (v1 memory, or v2) are needed: skipped, with one line,
otherwise.  The agent's state lives outside /tmp (a private /tmp hides
/tmp from the replica, so an agent with its folders there has none).
"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402
from agentproc import Agent, sim_nodes, submit, wait_state, write_node_file  # noqa: E402

DAEMON = {"fleet": None, "extra": ["--node-lost-after", "15"]}
JOB_UID_BASE = 2000000000


def usable():
    if os.geteuid() != 0:
        return False
    return os.path.isdir("/sys/fs/cgroup/memory") or os.path.exists("/sys/fs/cgroup/cgroup.controllers")


def skip_unless_usable():
    if not usable():
        print("skip: needs root and cgroups")
        return True
    return False


class Node:
    """One root agent with one sim node, its state under /var/lib (not /tmp)."""

    def __init__(self, d, extra=(), gpus=2, prefix="n"):
        self.state = tempfile.mkdtemp(prefix="gpupool-boundary-", dir="/var/lib")
        os.chmod(self.state, 0o755)
        self.nodes = sim_nodes(prefix, 1, gpus=gpus)
        self.extra = ["--cgroup-parent", "gpupool-test-%d" % os.getpid()] + list(extra)
        self.d = d
        self.agent = None

    def start(self):
        self.agent = Agent(self.d, write_node_file(self.d.dir, self.nodes), extra=self.extra,
                           state_dir=self.state).start()
        self.agent.wait_up([n["name"] for n in self.nodes])
        return self.agent

    def close(self):
        if self.agent:
            self.agent.stop()
        shutil.rmtree(self.state, ignore_errors=True)


@contextlib.contextmanager
def running_node(d, tenants=("t",), extra=(), prefix="n"):
    """A started Node (and its agent, its node PREFIX-0) with these tenants; closed after."""
    node = Node(d, extra=extra, prefix=prefix)
    try:
        a = node.start()
        for name in tenants:
            d.ok("PUT", "/v1/tenants/%s" % name, {})
        yield node, a
    finally:
        node.close()


def log_text(a, job_id):
    gpd.wait_for(lambda: a.replica_logs(job_id), 10, "job %d's log" % job_id)
    with open(a.replica_logs(job_id)[-1], errors="replace") as f:
        return f.read()


def wait_log(a, job_id, pattern, timeout=20):
    """The log once it matches pattern."""
    return gpd.wait_for(lambda: (lambda t: t if re.search(pattern, t) else None)(log_text(a, job_id)), timeout,
                        "job %d's log to match %r" % (job_id, pattern))


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(next(line.split()[1] for line in f if line.startswith("Uid:")))


# ---- refused on the node ----

def supervise(directory, trust="trusted", **launch):
    """The replica's command and its tenant's trust come in its assignment (spec/assignment.h)."""
    assignment = {"job": 1, "replica": 0, "replicas": 1, "command": ["id", "-u"], "trust": trust}
    body = dict({"assignment": assignment, "env": [], "user": None, "workdir": os.path.join(directory, "work"),
                 "log": os.path.join(directory, "replica.log"), "cgroup_parent": None, "cgroup_name": "boundary",
                 "devices": [], "uid_min": 1000}, **launch)
    with open(os.path.join(directory, "launch.json"), "w") as f:
        json.dump(body, f)
    subprocess.run([os.path.join(gpd.BIN, "gpupool-supervise"), directory], timeout=30)
    read = lambda name: open(os.path.join(directory, name)).read() if os.path.exists(os.path.join(directory, name)) else ""  # noqa: E731
    return read("exit"), read("error"), read("replica.log")


def test_a_replica_as_root_or_a_system_user_or_untrusted_without_isolation_is_refused(d):
    if skip_unless_usable():
        return
    directory = tempfile.mkdtemp(prefix="gpupool-supervise-")
    try:
        for user, why in (("root", "uid 0"), ("daemon", "below the lowest uid")):
            exit_text, error, log = supervise(directory, user=user)
            assert exit_text.startswith("exited 127"), exit_text
            assert why in error and why in log and "not started" in log, (error, log)
            os.unlink(os.path.join(directory, "replica.log"))
        exit_text, error, log = supervise(directory, job_uid=JOB_UID_BASE + 1, job_name="job1", trust="untrusted",
                                          isolate_devices=False)
        assert exit_text.startswith("exited 127") and "untrusted" in error, (exit_text, error)
        assert "not started" in log and str(JOB_UID_BASE + 1) not in log, log  # "id -u" never ran
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_a_job_named_root_never_runs_as_root(d):
    """Through gpupoold: refused by gpupoold (once it checks users) or by the node."""
    if skip_unless_usable():
        return
    with running_node(d) as (node, a):
        status, out = d.call("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "user": "root",
                                                  "command": ["sh", "-c", "id -u; sleep 30"]})
        if status >= 400:
            assert status < 500, (status, out)
            return  # gpupoold refused it: the node never sees it
        job_id = out["id"]
        wait_state(d, job_id, ("failed", "pending", "succeeded"), timeout=30)
        text = wait_log(a, job_id, "not started")
        assert "uid 0" in text, text


# ---- jobs of different tenants ----

PROBE = (
    'echo $$ > "$GPUPOOL_CHECKPOINT_DIR/pid"; '
    'while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/peer" ]; do sleep 0.1; done; '
    'P=$(cat "$GPUPOOL_CHECKPOINT_DIR/peer"); '
    'if cat /proc/$P/environ > /dev/null 2>&1; then echo environ-read; else echo environ-refused; fi; '
    'if kill -0 $P 2> /dev/null; then echo signal-sent; else echo signal-refused; fi; '
    'grep NoNewPrivs /proc/self/status; '
    'trap "exit 0" TERM; while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/release" ]; do sleep 0.1; done')


def test_jobs_of_two_tenants_cannot_read_or_signal_each_other(d):
    if skip_unless_usable():
        return
    with running_node(d, tenants=("a", "b")) as (node, a):
        jobs = [submit(d, tenant="a", command=PROBE), submit(d, tenant="b", command=PROBE)]
        pid_file = lambda j: os.path.join(a.checkpoint_dir(j), "pid")  # noqa: E731
        for j in jobs:
            gpd.wait_for(lambda: os.path.exists(pid_file(j)) and open(pid_file(j)).read().strip(), 20,
                         "job %d's pid" % j)
        pids = [int(open(pid_file(j)).read()) for j in jobs]
        assert [uid_of(p) for p in pids] == [JOB_UID_BASE + j for j in jobs], pids
        for j, peer in zip(jobs, reversed(pids)):
            with open(os.path.join(a.checkpoint_dir(j), "peer"), "w") as f:
                f.write("%d\n" % peer)
        for j in jobs:
            text = wait_log(a, j, "NoNewPrivs")
            assert "environ-refused" in text and "signal-refused" in text, text
            assert re.search(r"NoNewPrivs:\s+1", text), text
            st = os.stat(a.checkpoint_dir(j))
            assert (st.st_mode & 0o777, st.st_uid) == (0o700, JOB_UID_BASE + j), (oct(st.st_mode), st.st_uid)
        assert os.stat(os.path.dirname(a.checkpoint_dir(jobs[0]))).st_mode & 0o777 == 0o711
        for j in jobs:
            a.release(j)
            wait_state(d, j, "succeeded")


# ---- files ----

PLANTED = "gpupool-planted-%d" % os.getpid()
PLANT = ('echo secret > /tmp/{0} && echo secret > /var/tmp/{0} && echo secret > /dev/shm/{0} && '
         'echo mine > "$PWD/work-file" && echo planted; '
         'trap "exit 0" TERM; while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/release" ]; do sleep 0.1; done').format(PLANTED)
LOOK = ('for f in /tmp/{0} /var/tmp/{0} /dev/shm/{0}; do '
        '[ -e $f ] && echo "visible $f" || echo "invisible $f"; done').format(PLANTED)


def scratch_of(a, job_id):
    return [p for p in (os.path.join(a.state_dir, "n-0", "scratch", name) for name in
                        os.listdir(os.path.join(a.state_dir, "n-0", "scratch")))
            if os.path.basename(p).startswith("job%d-r0-" % job_id)]


def test_a_planted_tmp_file_is_private_and_gone_after_its_job_also_across_an_agent_kill(d):
    if skip_unless_usable():
        return
    with running_node(d, tenants=("a", "b")) as (node, a):
        planter = submit(d, tenant="a", command=PLANT)
        wait_log(a, planter, "planted")
        looker = submit(d, tenant="b", command=LOOK)
        wait_state(d, looker, "succeeded")
        text = log_text(a, looker)
        assert "visible" not in text.replace("invisible", ""), text
        assert text.count("invisible") == 3, text
        assert not any(os.path.exists(os.path.join(t, PLANTED)) for t in ("/tmp", "/var/tmp", "/dev/shm"))
        (tmp_dir,) = scratch_of(a, planter)
        assert os.path.exists(os.path.join(tmp_dir, "tmp", PLANTED))
        work = os.path.join(a.state_dir, "n-0", "work", os.path.basename(tmp_dir))  # both named for the run
        assert os.stat(work).st_mode & 0o777 == 0o700
        a.kill9()  # the replica lives on under its supervisor; the next agent adopts it
        a = node.start()
        a.release(planter)
        wait_state(d, planter, "succeeded", timeout=30)
        gpd.wait_for(lambda: not scratch_of(a, planter) and not os.path.exists(work), 10,
                     "job %d's /tmp and working folder removed" % planter)


def test_keep_scratch_keeps_the_folders_a_while_and_a_later_sweep_removes_them(d):
    if skip_unless_usable():
        return
    with running_node(d, extra=["--keep-scratch-s", "1"]) as (node, a):
        job_id = submit(d, command="echo kept > /tmp/f; echo kept > \"$PWD/f\"")
        wait_state(d, job_id, "succeeded")
        (tmp_dir,) = scratch_of(a, job_id)
        work = os.path.join(a.state_dir, "n-0", "work", os.path.basename(tmp_dir))
        assert os.path.exists(os.path.join(tmp_dir, "tmp", "f")) and os.path.exists(os.path.join(work, "f"))
        time.sleep(1.1)
        a.kill9()
        a = node.start()  # its first sweep finds them older than 1 s
        gpd.wait_for(lambda: not scratch_of(a, job_id) and not os.path.exists(work), 10, "the kept folders removed")


# ---- limits ----

FORK_2000 = r'''
import os, time
n = 0
try:
    for i in range(2000):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
    print("forked all 2000", flush=True)
except OSError as e:
    print("refused after %d: %s" % (n, e), flush=True)
'''


def test_a_job_forking_2000_processes_is_refused_by_pids_max(d):
    if skip_unless_usable():
        return
    if not os.path.isdir("/sys/fs/cgroup/pids") and "pids" not in open("/proc/cgroups").read():
        print("skip: no pids controller")
        return
    with running_node(d) as (node, a):
        job_id = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "command": ["python3", "-c", FORK_2000]})["id"]
        wait_state(d, job_id, ("succeeded", "failed"), timeout=60)
        text = log_text(a, job_id)
        assert "refused after" in text and "forked all" not in text, text
        assert int(re.search(r"refused after (\d+)", text).group(1)) < 1024, text


def cgroup_file(state_dir, controller, name):
    """A file of the one live replica's cgroup (v1: per controller; v2: one folder)."""
    (run,) = os.listdir(os.path.join(state_dir, "n-0", "replicas"))
    parent = "gpupool-test-%d" % os.getpid()
    v1 = os.path.join("/sys/fs/cgroup", controller, parent, run, name)
    return v1 if os.path.isdir("/sys/fs/cgroup/" + controller) else os.path.join("/sys/fs/cgroup", parent, run, name)


def test_a_job_without_limits_gets_its_gpus_share_of_the_node_and_the_default_pids_max(d):
    if skip_unless_usable():
        return
    with running_node(d) as (node, a):  # 2 GPUs, 64 cores, 256 GiB: one GPU's share is half
        job_id = submit(d)
        gpd.wait_for(lambda: a.starts(job_id), 20, "job %d started" % job_id)
        v1 = os.path.isdir("/sys/fs/cgroup/memory")
        mem = open(cgroup_file(a.state_dir, "memory", "memory.limit_in_bytes" if v1 else "memory.max")).read()
        assert int(mem) == 131072 << 20, mem
        if v1:
            quota = open(cgroup_file(a.state_dir, "cpu", "cpu.cfs_quota_us")).read()
            period = open(cgroup_file(a.state_dir, "cpu", "cpu.cfs_period_us")).read()
            assert int(quota) == 32 * int(period), (quota, period)
        else:
            assert open(cgroup_file(a.state_dir, "cpu", "cpu.max")).read().split()[0] == "3200000"
        assert open(cgroup_file(a.state_dir, "pids", "pids.max")).read().strip() == "1024"
        a.release(job_id)
        wait_state(d, job_id, "succeeded")


PRINT_64_MIB = ('python3 -c "import sys; line = b\'x\' * 1023 + b\'\\n\'; '
                '[sys.stdout.buffer.write(line) for _ in range(64 * 1024)]; print(\'the last line\')"')


def logs_from_gpupoold(d, job_id):
    data, offset = b"", 0
    import base64
    while True:
        view = d.ok("GET", "/v1/jobs/%d/logs?offset=%d" % (job_id, offset))
        data += base64.b64decode(view["data"])
        if view["next"] >= view["size"]:
            return data, view["eof"]
        offset = view["next"]


def test_a_job_printing_64_mib_leaves_a_capped_log_with_its_newest_lines(d):
    if skip_unless_usable():
        return
    with running_node(d, extra=["--log-max-mib", "2"]) as (node, a):
        job_id = submit(d, command=PRINT_64_MIB)
        wait_state(d, job_id, "succeeded", timeout=60)
        path = a.replica_logs(job_id)[-1]
        assert os.path.getsize(path) <= 2 << 20, os.path.getsize(path)
        text = log_text(a, job_id)
        assert text.endswith("the last line\n") and "gpupool: dropped " in text, text[-300:]
        shipped = gpd.wait_for(lambda: (lambda got: got[0] if got[1] else None)(logs_from_gpupoold(d, job_id)), 30,
                               "the whole log shipped")
        assert shipped.endswith(b"the last line\n") and b"gpupool: dropped " in shipped, shipped[-300:]
        assert len(shipped) < 16 << 20, len(shipped)  # the dropped bytes never reached gpupoold either
        history = d.ok("GET", "/v1/jobs/%d" % job_id)["history"]  # and the job's history says what went
        notes = [h.get("reason") or "" for h in history if h["kind"] == "log"]
        assert len(notes) == 1 and "bytes dropped" in notes[0], history
        dropped = int(notes[0].split("; ")[-1].split()[0])
        assert (64 << 20) - (2 << 20) <= dropped < 64 << 20, notes


if __name__ == "__main__":
    gpd.run([
        test_a_replica_as_root_or_a_system_user_or_untrusted_without_isolation_is_refused,
        test_a_job_named_root_never_runs_as_root,
        test_jobs_of_two_tenants_cannot_read_or_signal_each_other,
        test_a_planted_tmp_file_is_private_and_gone_after_its_job_also_across_an_agent_kill,
        test_keep_scratch_keeps_the_folders_a_while_and_a_later_sweep_removes_them,
        test_a_job_forking_2000_processes_is_refused_by_pids_max,
        test_a_job_without_limits_gets_its_gpus_share_of_the_node_and_the_default_pids_max,
        test_a_job_printing_64_mib_leaves_a_capped_log_with_its_newest_lines,
    ], **DAEMON)
