#!/usr/bin/env python3
"""A replica with an image runs in an OCI container (issue 31 section 2).

The real supervisor (gpupool-supervise, as the agent starts it) runs a
replica from a hand-written launch.json with a "container" object and a
dir: image made of busybox-static, under the real runc; each test is an
attempt a hostile job makes, or a promise of launch.h kept:
  - a job of tenant B beside tenant A's reads none of A's /tmp, /dev/shm,
    command line or working folder;
  - ps and /proc list only the job's own processes (pid namespace), it is
    PID 1's tree and runs as its uid with no capability (CapEff 0), under
    seccomp mode 2 and no_new_privs;
  - `unshare -U` (a user namespace of its own, to become root there) fails;
    with allow_userns it works; a setuid-root binary of its image, mount,
    sysctl, insmod, nsenter, chown and reading the agent's state folder
    (its own launch.json) all fail;
  - /tmp is its own and what it writes outside its folders is gone at its
    end; read_only_root refuses a write to /;
  - it sees its own GPU's node and not another's (the sim's stand-in files);
  - a fork bomb stops at its pids limit;
  - a stop reaches it (SIGTERM, grace), the tree is killed after the grace,
    the exit code and signal are the job's own; going over its memory is oom;
  - the agent's kill -9 leaves the supervisor and its container running;
    the next agent's stop reaches the job, which checkpoints into
    GPUPOOL_CHECKPOINT_DIR (the same path inside), and the container is
    deleted at its end; its host pid is in the replica's cgroup;
  - the real gpupoold and agent refuse an untrusted tenant's job that names
    no image (--containers required, the default), the reason in its log;
  - an image hold whose supervisor was killed with -9 (its replica too)
    while no agent ran is released by the restarted agent, and the image
    can then be pruned.
Skipped with one line when not root or runc is missing.
"""
import base64
import glob
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpd  # noqa: E402

SUPERVISE = os.path.join(gpd.BIN, "gpupool-supervise")
CGROUP_PARENT = "gpupool-ctest-%d" % os.getpid()
RUNC = shutil.which("runc") or "/usr/sbin/runc"
BUSYBOX = shutil.which("busybox") or "/bin/busybox"
UID = 2000000123


def check(what, expected, seen):
    print("expected: %s: %s" % (what, expected))
    print("seen:     %s" % str(seen)[:300])


def make_image(root):
    """A dir: image: busybox-static and its applets."""
    for d in ("bin", "proc", "sys", "dev", "tmp", "etc", "usr/bin"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    for applet in ("sh", "ps", "cat", "ls", "sleep", "id", "grep", "unshare", "touch", "echo", "head", "dd", "true",
                   "kill", "wc", "hostname", "mount", "sysctl", "insmod", "nsenter", "chown"):
        os.symlink("busybox", os.path.join(root, "bin", applet))
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")


class Run:
    """One replica run by the supervisor in a container."""

    def __init__(self, top, image, script, name="job7-r0-100", mem_mib=256, devices=(), gpus=(), start=True,
                 **assignment):
        self.dir = os.path.join(top, "replicas", name)
        self.work = os.path.join(top, "work", name)
        self.bundle = os.path.join(top, "scratch", name)
        self.log = os.path.join(top, "logs", name + ".log")
        self.ckpt = os.path.join(top, "ckpt", "job7")
        for d in (self.dir, os.path.dirname(self.log), os.path.dirname(self.bundle), self.ckpt):
            os.makedirs(d, exist_ok=True)
        os.chown(self.ckpt, UID, UID)
        a = {"job": 7, "replica": 0, "replicas": 1, "bind_time": 100, "action": "run", "tenant": "t",
             "command": ["sh", "-c", script], "trust": "untrusted", "image": "dir:" + image}
        a.update(assignment)
        launch = {"env": ["GPUPOOL_JOB_ID=7", "GPUPOOL_CHECKPOINT_DIR=" + self.ckpt], "user": None,
                  "job_uid": UID, "job_name": "job7", "uid_min": 1000, "workdir": self.work, "tmp_dir": None,
                  "keep_scratch": False, "log": self.log, "log_max_bytes": 1 << 20,
                  "cgroup_parent": CGROUP_PARENT, "cgroup_name": name, "cpu_millis": 1000, "mem_mib": mem_mib,
                  "shm_mib": 64, "pids_max": 256, "isolate_devices": True, "devices": list(devices),
                  "visible": ",".join(gpus), "assignment": a, "private_tmp": True,
                  "container": {"runtime": RUNC, "id": "gpupool-test-" + name, "bundle": self.bundle,
                                "rootfs": image, "gpus": list(gpus),
                                "binds": [{"source": self.work, "target": self.work, "read_only": False},
                                          {"source": self.ckpt, "target": self.ckpt, "read_only": False}]}}
        with open(os.path.join(self.dir, "launch.json"), "w") as f:
            json.dump(launch, f)
        self.proc = subprocess.Popen([SUPERVISE, self.dir], stdin=subprocess.DEVNULL) if start else None

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_file(self, name, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if os.path.exists(self.path(name)):
                with open(self.path(name)) as f:
                    return f.read().strip()
            time.sleep(0.02)
        raise AssertionError("no %s after %ss; log: %s" % (name, timeout, self.output()))

    def output(self):
        try:
            with open(self.log) as f:
                return f.read()
        except OSError:
            return ""

    def wait_output(self, text, timeout=20):
        end = time.time() + timeout
        while time.time() < end:
            if text in self.output():
                return
            time.sleep(0.02)
        raise AssertionError("no %r in the log: %s" % (text, self.output()))

    def end(self, timeout=20):
        exit_text = self.wait_file("exit", timeout)
        self.proc.wait(timeout)
        return exit_text

    def stop(self, sig=signal.SIGTERM, grace_ms=10000, cause="requested"):
        with open(self.path("stop"), "w") as f:
            f.write("%d %d %s\n" % (sig, int(time.time() * 1000) + grace_ms, cause))
        self.proc.send_signal(signal.SIGUSR1)


def test_the_job_sees_only_itself(top, image):
    r = Run(top, image, "ps -o pid,user,args; echo uid=$(id -u); grep -E '^(Seccomp|CapEff|NoNewPrivs):' "
                        "/proc/self/status; ls /proc | grep -c '^[0-9]'; echo ppid=$PPID; echo host=$(hostname); "
                        "head -c 0 /etc/hosts && echo hosts-ok")
    assert r.end() == "exited 0 0", r.output()
    out = r.output()
    lines = [l for l in out.splitlines() if l.strip() and l.split()[0].isdigit() and len(l.split()) > 2]
    assert len(lines) <= 3 and lines[0].split()[0] == "1", out  # sh (PID 1), ps, and nothing of the host's
    assert "uid=%d" % UID in out and "CapEff:\t0000000000000000" in out, out
    assert "Seccomp:\t2" in out and "NoNewPrivs:\t1" in out, out
    assert "agent" not in out and "gpupoold" not in out, out
    assert "host=%s" % os.uname().nodename in out and "hosts-ok" in out, out  # peers resolve as on the host


def test_root_mounts_sysctls_modules_and_the_agents_files_are_out_of_reach(top, image):
    """The job tries to become root through a setuid-root binary in its own
    image, to mount, change a sysctl, load a module, enter the host's
    namespaces, and to read its own launch.json (its secrets, in the
    agent's state folder): each attempt prints FAILED-<what> or the
    supervisor's marker, never the success word."""
    suid = os.path.join(image, "bin", "suid-busybox")
    shutil.copy(BUSYBOX, suid)
    os.chmod(suid, 0o4755)  # setuid root, as a hostile image would ship it
    attempts = [("setuid", "[ \"$(/bin/suid-busybox id -u)\" = 0 ]"),
                ("mount", "mount -t tmpfs none $PWD"),
                ("sysctl", "sysctl -w kernel.hostname=owned"),
                ("module", "insmod /nonexistent.ko || [ $? -eq 0 ]"),
                ("nsenter", "nsenter -t 1 -m -u -i -n -p true && [ -e /proc/1/root%s ]" % image),
                ("chown", "chown 0 $PWD"),
                ("launch-json", "cat %s/launch.json" % os.path.join(top, "replicas", "job7-r0-100")),
                ("agent-state", "ls %s" % os.path.join(top, "replicas"))]
    script = "; ".join("if %s >/dev/null 2>&1; then echo SUCCEEDED-%s; else echo FAILED-%s; fi" % (cmd, w, w)
                       for w, cmd in attempts)
    r = Run(top, image, script)
    assert r.end() == "exited 0 0", r.output()
    out = r.output()
    for what, _ in attempts:
        assert "FAILED-" + what in out and "SUCCEEDED-" + what not in out, (what, out)
    assert os.uname().nodename != "owned"


def test_a_user_namespace_of_its_own_is_refused(top, image):
    r = Run(top, image, "unshare -U -r id && echo MADE-ROOT || echo refused")
    assert r.end() == "exited 0 0" and "refused" in r.output() and "MADE-ROOT" not in r.output(), r.output()
    r = Run(top, image, "unshare -U -r id -u", name="job7-r0-101", allow_userns=True)
    assert r.end() == "exited 0 0" and "\n0\n" in "\n" + r.output(), r.output()


def test_tmp_is_its_own_and_its_writes_are_thrown_away(top, image):
    fd, marker = tempfile.mkstemp(prefix="gpupool-host-", dir="/tmp")  # the host's /tmp: the job must not see it
    os.close(fd)
    planted = os.path.basename(marker) + "-planted"
    try:
        r = Run(top, image, "ls %s 2>&1; echo planted > /tmp/%s; cat /tmp/%s; ls -ld /tmp" % (marker, planted, planted))
        assert r.end() == "exited 0 0", r.output()
        assert "No such file" in r.output() and "planted" in r.output(), r.output()
        assert not os.path.exists(r.bundle), os.listdir(r.bundle)  # the writable layer went with it
        assert not os.path.exists(os.path.join("/tmp", planted)), "it reached the host's /tmp"
    finally:
        for path in (marker, os.path.join("/tmp", planted)):
            if os.path.exists(path):
                os.unlink(path)
    ro = Run(top, image, "touch /etc/x && echo WROTE || echo read-only; touch $PWD/ok && echo workdir-ok",
             name="job7-r0-102", read_only_root=True)
    assert ro.end() == "exited 0 0" and "read-only" in ro.output() and "workdir-ok" in ro.output(), ro.output()
    assert not os.path.exists(os.path.join(image, "etc", "x"))


def test_it_opens_its_gpu_and_no_other(top, image):
    devdir = os.path.join(top, "dev")
    os.makedirs(devdir, exist_ok=True)
    for n, minor in (("nvidia0", 240), ("nvidia1", 241), ("nvidiactl", 255)):  # stand-ins, as the sim's tests make
        os.mknod(os.path.join(devdir, n), 0o666 | stat.S_IFCHR, os.makedev(195, minor))
    r = Run(top, image, "ls /dev | grep nvidia; ls /dev/nvidia1 2>&1; mknod /dev/x c 195 241 2>&1; echo done",
            devices=[os.path.join(devdir, "nvidia0"), os.path.join(devdir, "nvidiactl")], gpus=["GPU-0"])
    assert r.end() == "exited 0 0", r.output()
    seen = r.output().splitlines()
    assert "nvidia0" in seen and "nvidiactl" in seen and "nvidia1" not in seen, seen
    assert any("nvidia1: No such file" in l for l in seen) and any("mknod" in l for l in seen), seen


def test_a_stop_reaches_the_job_and_the_grace_ends_it(top, image):
    r = Run(top, image, "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.1; done")
    r.wait_output("ready")
    r.stop()
    assert r.end() == "exited 3 0" and "got-term" in r.output(), r.output()
    stubborn = Run(top, image, "trap '' TERM; echo ready; while :; do sleep 0.1; done", name="job7-r0-103")
    stubborn.wait_output("ready")
    stubborn.stop(grace_ms=300)
    assert stubborn.end().startswith("killed_after_grace"), stubborn.output()


def test_exit_codes_and_oom_are_the_jobs(top, image):
    r = Run(top, image, "exit 42")
    assert r.end() == "exited 42 0", r.output()
    r = Run(top, image, "echo ready; sleep 60", name="job7-r0-104")
    r.wait_output("ready")
    r.stop(sig=signal.SIGKILL)
    assert r.end() == "signalled -1 9", r.output()
    r = Run(top, image, "dd if=/dev/zero of=/dev/shm/fill bs=1M count=200", name="job7-r0-105", mem_mib=64)
    assert r.end().startswith("oom"), r.output()


def test_two_tenants_side_by_side_see_nothing_of_each_other(top, image):
    a = Run(top, image, "echo a-secret > /tmp/a-file; echo a-secret > /dev/shm/a-file; echo ready; "
                        "exec sh -c 'sleep 30; true' --api-key=a-api-key")
    a.wait_output("ready")
    with open("/proc/%s/cmdline" % a.wait_file("pid")) as f:
        assert "a-api-key" in f.read()  # what B goes looking for is there, on the host
    b = Run(top, image, "cat /tmp/a-file /dev/shm/a-file 2>&1; ps -o args; cat /proc/*/cmdline 2>/dev/null | "
                        "grep -c 'a-api-k[e]y'; ls %s 2>&1; exit 0" % a.work, name="job8-r0-100")
    assert b.end() == "exited 0 0", b.output()
    seen = b.output()
    assert "a-secret" not in seen and "a-api-key" not in seen, seen
    assert "\n0\n" in seen, seen  # no command line of A's among B's processes
    assert "No such file" in seen.splitlines()[-1], seen  # A's working folder is not in B's view
    a.stop(sig=signal.SIGKILL)
    a.end()


def test_a_fork_bomb_stops_at_its_pids_limit(top, image):
    r = Run(top, image, "(i=0; while [ $i -lt 400 ]; do sleep 3 & i=$((i+1)); done) 2>/dev/null; echo bombed; "
                        "exec sleep 3")
    r.wait_output("bombed")
    group = os.path.join("/sys/fs/cgroup/pids", CGROUP_PARENT, "job7-r0-100")
    if os.path.isdir(group):  # v1 here; the v2 machine's pids.max is the same file in one folder
        with open(os.path.join(group, "pids.current")) as f:
            assert int(f.read()) <= 256
        with open(os.path.join(group, "pids.events")) as f:
            assert int(f.read().split()[1]) > 0  # forks refused at pids_max 256
    r.stop(sig=signal.SIGKILL)
    r.end()


def test_the_container_outlives_its_agent_and_is_adopted(top, image):
    """The agent's kill -9 (here: the supervisor's parent, which is what the
    agent is to it) leaves the container running; a later agent stops it
    through the same stop file and SIGUSR1, and its end is written."""
    r = Run(top, image, "trap 'echo checkpointing; touch $GPUPOOL_CHECKPOINT_DIR/.done; exit 0' TERM; "
                        "echo ready; while :; do sleep 0.1; done", start=False)
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "p = subprocess.Popen(sys.argv[1:]); print(p.pid, flush=True); time.sleep(60)",
                               SUPERVISE, r.dir], stdout=subprocess.PIPE)
    supervisor = int(parent.stdout.readline())
    r.wait_output("ready")
    pid = int(r.wait_file("pid"))
    with open("/proc/%d/cgroup" % pid) as f:
        assert "job7-r0-100" in f.read()  # telemetry by pid: the host pid is in the replica's group
    parent.kill()  # the "agent", kill -9
    parent.wait()
    os.kill(supervisor, 0)  # its supervisor and its job run on
    os.kill(pid, 0)
    with open(r.path("stop"), "w") as f:  # the next agent stops it
        f.write("%d %d requested\n" % (signal.SIGTERM, int(time.time() * 1000) + 10000))
    os.kill(supervisor, signal.SIGUSR1)
    assert r.wait_file("exit") == "exited 0 0", r.output()
    assert "checkpointing" in r.output() and os.path.exists(os.path.join(r.ckpt, ".done"))
    state = subprocess.run([RUNC, "state", "gpupool-test-job7-r0-100"], capture_output=True)
    assert state.returncode != 0, state.stdout  # deleted at its end


def test_an_image_from_a_registry_is_pulled_held_and_released(top, image):
    """A docker:// image: the supervisor pulls it into the node's image store
    (a real docker-registry on loopback), holds it while the replica runs,
    runs the job in it (the image's Env under the job's own) and releases
    the hold at the end; an image the
    registry does not have is the replica's failed start, saying why."""
    if not all(shutil.which(t) for t in ("skopeo", "umoci", "docker-registry")):
        print("skip: needs skopeo, umoci and docker-registry")
        return
    sys.path.insert(0, os.path.join(HERE, "..", "agent"))
    import test_image_store as images  # the registry and push helpers
    layout = os.path.join(top, "layout")
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run(["umoci", "init", "--layout", layout], **quiet)
    subprocess.run(["umoci", "new", "--image", layout + ":v1"], **quiet)
    with open(os.path.join(image, "marker"), "w") as f:
        f.write("from-the-registry\n")
    subprocess.run(["umoci", "insert", "--image", layout + ":v1", image, "/"], **quiet)
    subprocess.run(["umoci", "config", "--image", layout + ":v1", "--config.env", "GREETING=from-the-image",
                    "--config.env", "GPUPOOL_JOB_ID=the-image-must-not-win"], **quiet)
    reg, host = images.start_registry(top, "registry")
    try:
        ref = "docker://%s/t/probe:v1" % host
        images.push(layout, ref)
        store = os.path.join(top, "images")
        for name, wanted, end in ((ref, "from-the-registry greeting=from-the-image job=7", "exited 0"),
                                  ("docker://%s/t/absent:v1" % host, "image pull failed (not_found)", "image_pull 127")):
            run = Run(top, image, 'echo "$(cat /marker) greeting=$GREETING job=$GPUPOOL_JOB_ID"',
                      name="job7-r0-%d" % len(name), start=False)
            with open(run.path("launch.json")) as f:
                launch = json.load(f)
            del launch["container"]["rootfs"]
            launch["assignment"]["image"] = name
            launch["container"].update({"image": name, "image_store": {"root": store, "max_bytes": 0,
                                                                       "insecure": [host], "timeout_s": 120}})
            with open(run.path("launch.json"), "w") as f:
                json.dump(launch, f)
            run.proc = subprocess.Popen([SUPERVISE, run.dir], stdin=subprocess.DEVNULL)
            exit_text = run.end(timeout=120)
            check("%s: the job's log" % name, wanted, run.output())
            assert wanted in run.output(), run.output()
            check("%s: the end (reason, code)" % name, end, exit_text)
            assert exit_text.startswith(end), exit_text
        holds = [f for _, _, files in os.walk(os.path.join(store, "holds")) for f in files]
        check("holds after the replicas ended", [], holds)
        assert holds == [], holds
    finally:
        reg.kill()
        reg.wait()


def registry_image(top, image, reg_host):
    """image (a folder) pushed as docker://REG/t/probe:v1; the reference."""
    import test_image_store as images  # the registry and push helpers
    layout = os.path.join(top, "layout")
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run(["umoci", "init", "--layout", layout], **quiet)
    subprocess.run(["umoci", "new", "--image", layout + ":v1"], **quiet)
    subprocess.run(["umoci", "insert", "--image", layout + ":v1", image, "/"], **quiet)
    ref = "docker://%s/t/probe:v1" % reg_host
    images.push(layout, ref)
    return ref


def test_an_image_hold_a_killed_supervisor_left_is_released_by_the_agent(top, image):
    """A replica's supervisor holds its image in the node's store; killed with -9 (its replica
    too) while the agent is down, it never releases the hold, and before the fix no prune could
    ever evict that image.  The restarted agent collects the dead run and releases its holds:
    `gpupool-agent image prune` then removes the image."""
    if not all(shutil.which(t) for t in ("skopeo", "umoci", "docker-registry")):
        print("skip: needs skopeo, umoci and docker-registry")
        return
    sys.path.insert(0, os.path.join(HERE, "..", "agent"))
    import agentproc
    import test_image_store as images
    reg, host = images.start_registry(top, "registry")
    d = gpd.Daemon(fleet=None)
    d.start()
    state = tempfile.mkdtemp(prefix="gpupool-containers-", dir="/var/lib")
    os.chmod(state, 0o755)
    store = os.path.join(state, "store")
    nodes = agentproc.sim_nodes("n", 1)
    agent = agentproc.Agent(d, agentproc.write_node_file(d.dir, nodes), state_dir=state,
                            extra=["--cgroup-parent", CGROUP_PARENT, "--image-store", store,
                                   "--insecure-registry", host])
    prune = [os.path.join(gpd.BIN, "gpupool-agent"), "image", "prune", "--store", store]
    listed = [os.path.join(gpd.BIN, "gpupool-agent"), "image", "list", "--store", store]
    try:
        ref = registry_image(top, image, host)
        agent.start().wait_up([n["name"] for n in nodes])
        d.ok("PUT", "/v1/tenants/t", {})
        job = agentproc.submit(d, command="echo ready; while :; do sleep 1; done", image=ref)
        gpd.wait_for(lambda: any("ready" in open(p).read() for p in agent.replica_logs(job)), 60, "the job runs")
        run = glob.glob(os.path.join(state, "*", "replicas", "job%d-r0-*" % job))[0]
        holds = lambda: sorted(f for _, _, files in os.walk(os.path.join(store, "holds")) for f in files)
        check("a hold while it runs", ["gpupool-" + os.path.basename(run)], holds())
        assert holds() == ["gpupool-" + os.path.basename(run)], holds()
        agent.kill9()
        with open(os.path.join(run, "supervisor")) as f:
            supervisor = int(f.read().split()[0])
        with open(os.path.join(run, "pid")) as f:
            pid = int(f.read().strip())
        os.kill(supervisor, signal.SIGKILL)  # an OOM kill, a kill -9: it never reaches its end
        os.killpg(pid, signal.SIGKILL)
        agentproc.wait_gone(supervisor)
        subprocess.run(prune, capture_output=True, check=True)
        kept = json.loads(subprocess.run(listed, capture_output=True, text=True, check=True).stdout)
        check("images after a prune, the supervisor dead and no agent", 1, len(kept["images"]))
        assert len(kept["images"]) == 1 and holds(), kept  # the leak: held by nobody alive
        agent.start().wait_up([n["name"] for n in nodes])
        gpd.wait_for(lambda: holds() == [], 30, "the restarted agent to release the hold")
        assert "image holds released=1" in agent.read_log(), agent.read_log()
        subprocess.run(prune, capture_output=True, check=True)
        left = json.loads(subprocess.run(listed, capture_output=True, text=True, check=True).stdout)
        check("holds and images after the restart and a prune", ([], 0), (holds(), len(left["images"])))
        assert holds() == [] and left["images"] == [], (holds(), left)
    finally:
        agent.stop()
        d.stop()
        d.cleanup()
        reg.kill()
        reg.wait()
        shutil.rmtree(state, ignore_errors=True)


def agent_refuses_an_untrusted_tenants_job_without_an_image():
    """The real gpupoold and agent: an untrusted tenant's job that names no
    image is refused on the node, with the reason in the agent's log and the
    job's end; with --containers optional the same job runs."""
    import agentproc
    for mode, refused in (([], True), (["--containers", "optional"], False)):
        d = gpd.Daemon(fleet=None)
        d.start()
        state = tempfile.mkdtemp(prefix="gpupool-containers-", dir="/var/lib")
        os.chmod(state, 0o755)
        nodes = agentproc.sim_nodes("n", 1)
        agent = agentproc.Agent(d, agentproc.write_node_file(d.dir, nodes), state_dir=state,
                                extra=["--cgroup-parent", CGROUP_PARENT] + mode).start()
        try:
            agent.wait_up([n["name"] for n in nodes])
            # gpupoold would refuse the job at submit (container: required);
            # a tenant that allows bare jobs shows the agent's own refusal
            d.ok("PUT", "/v1/tenants/u", {"trust": "untrusted", "container": "optional"})
            job = agentproc.submit(d, tenant="u", command="echo bare-ran")
            if refused:
                gpd.wait_for(lambda: "refused: the tenant is untrusted" in agent.read_log(), 20, "the refusal")
                assert agentproc.wait_state(d, job, "failed")
                shipped = gpd.wait_for(lambda: (lambda o: o if o.get("data") else None)(
                    d.ok("GET", "/v1/jobs/%d/logs" % job)), 20, "the job's log")
                text = base64.b64decode(shipped["data"]).decode()
                assert "names no image" in text and "bare-ran" not in text, text
            else:
                gpd.wait_for(lambda: any("bare-ran" in open(p).read() for p in agent.replica_logs(job)), 20, "its run")
            assert "containers: OCI runtime" in agent.read_log(), agent.read_log()
            assert ("WARNING: --containers optional" in agent.read_log()) == (not refused), agent.read_log()
        finally:
            agent.stop()
            d.stop()
            d.cleanup()
            shutil.rmtree(state, ignore_errors=True)


def remove_cgroup_parent(name):
    """The parent group in every hierarchy (the runtime makes it in the v1
    controllers the launcher does not use, too), once its runs are gone."""
    for path in glob.glob(os.path.join("/sys/fs/cgroup", "*", name)) + [os.path.join("/sys/fs/cgroup", name)]:
        try:
            os.rmdir(path)
        except OSError:
            pass


def main():
    if os.geteuid() != 0 or not os.path.exists(RUNC) or not os.path.exists(BUSYBOX):
        print("SKIP test_containers: needs root, runc and busybox-static")
        return 0
    tests = [(k, v) for k, v in sorted(globals().items()) if k.startswith("test_")]
    tests.append(("agent_refuses_an_untrusted_tenants_job_without_an_image",
                  lambda top, image: agent_refuses_an_untrusted_tenants_job_without_an_image()))
    only = sys.argv[1:]
    failed = 0
    for name, fn in tests:
        if only and name not in only:
            continue
        top = tempfile.mkdtemp(prefix="gpct-", dir="/var/tmp")
        os.chmod(top, 0o711)
        image = os.path.join(top, "image")
        make_image(image)
        for d in ("work",):
            os.makedirs(os.path.join(top, d), mode=0o711)
        try:
            fn(top, image)
            print("ok", name)
        except Exception as e:  # noqa: BLE001
            failed += 1
            print("FAIL", name, e)
        finally:  # what a failed test left running
            listed = subprocess.run([RUNC, "list", "-q"], capture_output=True, text=True).stdout.split()
            for cid in listed:
                if cid.startswith("gpupool-test-"):
                    subprocess.run([RUNC, "delete", "--force", cid], capture_output=True)
            subprocess.run(["rm", "-rf", top])
    remove_cgroup_parent(CGROUP_PARENT)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
