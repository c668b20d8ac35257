#!/usr/bin/env python3
"""An attacking tenant, as a test suite (issue 31, section 5; docs/security.md's
table "The attempts, what stops each, and its test").

The real gpupoold and a real root gpupool-agent (sim backend, cgroups, OCI
containers under runc, the network fence) run two untrusted tenants' jobs on
one node, each in a container from a dir: image (busybox and tests/isolation's
probe).  Tenant A's job is the victim: it listens on a port, keeps a secret in
its command line, environment, working folder and checkpoint folder, and
watches its /tmp, /var/tmp and /dev/shm for a file B plants.  Tenant B's job
is the attacker: `probe attack` tries every attempt against A, the agent and
the node, and prints "attempt NAME: blocked|SUCCEEDED (what it saw)".

The suite prints, per attempt, what was expected and what was seen, and fails
when any attempt succeeded, when A saw B's planted file, or when A or the
agent did not outlive B's attack.  Needs root, cgroups, runc, busybox-static
and nft: without them it says which is missing, in one line, and exits 0.
"""
import glob
import json
import os
import re
import shutil
import stat
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import gpd  # noqa: E402
import test_node_boundary as boundary  # noqa: E402
from agentproc import wait_state  # noqa: E402

PROBE = os.environ.get("PROBE", os.path.join(gpd.BIN, "isolation_probe"))
BUSYBOX = shutil.which("busybox") or "/bin/busybox"
SECRET = "victim-secret-%d" % os.getpid()
# below the kernel's ephemeral range (32768-60999), where the other tests' daemons, registries and
# clients take their ports: a port from pid up to 39999 met one of them under make test's load
PORT = 10000 + os.getpid() % 20000
DAEMON = {"fleet": None, "extra": ["--node-lost-after", "15"]}
# every attempt the probe makes; each must be reported, and blocked
ATTEMPTS = ("list_processes", "read_environment", "read_a_files", "read_agent_state", "open_other_gpu",
            "connect_to_a", "mount", "load_module", "sysctl", "user_namespace", "ptrace", "setuid_root",
            "exhaust_processes", "exhaust_memory", "server_credentials")


def missing():
    """What this machine lacks for the suite, or None."""
    if os.geteuid() != 0:
        return "root"
    if not boundary.usable():
        return "cgroups"
    for tool in ("runc", "nft"):
        if not shutil.which(tool):
            return tool
    if not os.path.exists(BUSYBOX):
        return "busybox-static"
    if not os.path.exists(PROBE):
        return "the probe (%s)" % PROBE
    return None


def make_image(root):
    """A dir: image: busybox, its shell, and the probe at /bin/probe."""
    for d in ("bin", "proc", "sys", "dev", "tmp", "var/tmp", "etc", "mnt"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    os.chmod(os.path.join(root, "tmp"), 0o1777)
    os.chmod(os.path.join(root, "var/tmp"), 0o1777)
    shutil.copy(BUSYBOX, os.path.join(root, "bin", "busybox"))
    os.symlink("busybox", os.path.join(root, "bin", "sh"))
    shutil.copy(PROBE, os.path.join(root, "bin", "probe"))
    with open(os.path.join(root, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\n")


def stand_in_gpus(devdir, count):
    os.makedirs(devdir, exist_ok=True)
    for minor in range(count):
        path = os.path.join(devdir, "nvidia%d" % minor)
        if not os.path.exists(path):
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(195, minor))


def launch_of(agent, job_id):
    """The replica's launch.json, as its agent wrote it."""
    paths = glob.glob(os.path.join(agent.state_dir, "*", "replicas", "job%d-r0-*" % job_id, "launch.json"))
    assert paths, "no launch.json of job %d" % job_id
    with open(paths[-1]) as f:
        return json.load(f), os.path.dirname(paths[-1])


def env_value(launch, name):
    for kv in launch.get("env", []):
        if kv.startswith(name + "="):
            return kv.split("=", 1)[1]
    return ""


def attempts_in(text):
    """{attempt: (blocked|SUCCEEDED, what the probe saw)} from B's log."""
    return {m[0]: (m[1], m[2]) for m in re.findall(r"^attempt (\w+): (blocked|SUCCEEDED) \((.*)\)$", text, re.M)}


def test_a_hostile_tenant_reaches_nothing_of_another(d):
    top = tempfile.mkdtemp(prefix="gpupool-isolation-", dir="/var/lib")
    os.chmod(top, 0o711)
    image, devdir = os.path.join(top, "image"), os.path.join(top, "dev")
    make_image(image)
    stand_in_gpus(devdir, 2)
    node = boundary.Node(d, extra=["--containers", "required"], prefix="iso")
    node.nodes[0]["device_dir"] = devdir  # the sim's stand-in GPUs, injected into containers like real ones
    try:
        agent = node.start()
        for tenant in ("a", "b"):  # the suite's image folder, as an admin would allow a shared one
            d.ok("PUT", "/v1/tenants/%s" % tenant, {"trust": "untrusted", "image_sources": ["dir:%s/" % top]})
        # B's first attempt, at submit: the host's root as its image (or anything outside its sources)
        for ref in ("dir:/", "dir:/var/lib", "oci:/var/lib/x:1"):
            status, out = d.call("POST", "/v1/jobs", {"tenant": "b", "gpus": 1, "image": ref, "command": ["true"]})
            print("expected: image %s refused (400 image); seen: %d %s" % (ref, status, out.get("error", {}).get("field")))
            assert status == 400 and out["error"]["field"] == "image", (ref, status, out)
        victim = d.ok("POST", "/v1/jobs", {
            "tenant": "a", "gpus": 1, "image": "dir:" + image, "mem_mib": 256, "pids_max": 128,
            "command": ["/bin/probe", "victim", str(PORT), SECRET], "env": {"A_TOKEN_LIKE": SECRET}})["id"]
        wait_state(d, victim, "running")
        try:
            gpd.wait_for(lambda: agent.replica_logs(victim), 60, "the victim's log")
            boundary.wait_log(agent, victim, "victim: listening", timeout=30)
        except AssertionError:
            print("--- the victim's log ---\n" + boundary.log_text(agent, victim)[-2000:])
            print("--- the agent's log ---\n" + agent.read_log())
            raise
        launch, replica_dir = launch_of(agent, victim)
        a_uuid = d.ok("GET", "/v1/jobs/%d" % victim)["placement"][0]["gpus"][0]
        gpus = [g for n in d.ok("GET", "/v1/nodes")["nodes"] for g in n["gpus"]]
        a_index = str(next(g["index"] for g in gpus if g["uuid"] == a_uuid))
        a_gpu = ["/dev/nvidia" + a_index, os.path.join(devdir, "nvidia" + a_index)]  # in B's /dev, on the host
        a_paths = [launch.get("workdir", ""), env_value(launch, "GPUPOOL_CHECKPOINT_DIR"),
                   os.path.dirname(launch.get("log", "")), replica_dir]
        agent_paths = [agent.state_dir] + glob.glob(os.path.join(agent.state_dir, "*", "credential*"))
        attacker = d.ok("POST", "/v1/jobs", {
            "tenant": "b", "gpus": 1, "image": "dir:" + image, "mem_mib": 128, "pids_max": 256,
            "command": ["/bin/probe", "attack"],
            "env": {"SECRET": SECRET, "A_PORT": str(PORT), "NODE_ADDRS": boundary_node_addrs(),
                    "A_PATHS": " ".join(p for p in a_paths if p), "AGENT_PATHS": " ".join(agent_paths),
                    "OTHER_DEVICE": " ".join(a_gpu), "SERVER_URL": d.url,
                    "MEM_LIMIT_MIB": "128"}})["id"]
        wait_state(d, attacker, ("succeeded", "failed"), timeout=120)
        text = boundary.log_text(agent, attacker)
        seen = attempts_in(text)
        failures = []
        for name in ATTEMPTS:
            result, what = seen.get(name, ("not reported", ""))
            print("expected: %-18s blocked" % name)
            print("seen:     %-18s %s (%s)" % (name, result, what))
            if result != "blocked":
                failures.append(name)
        victim_log = boundary.log_text(agent, victim)
        print("expected: A saw no file B planted; seen: %s" %
              ("none" if "saw planted" not in victim_log else victim_log))
        if "saw planted" in victim_log:
            failures.append("plant_shared_file")
        state = d.ok("GET", "/v1/jobs/%d" % victim)["state"]
        print("expected: A running and the agent up after the attack; seen: A %s, agent %s" %
              (state, "up" if agent.proc.poll() is None else "gone"))
        if state != "running" or agent.proc.poll() is not None:
            failures.append("a_or_agent_disturbed")
        assert not failures, "attempts that got through: %s\n--- B's log ---\n%s" % (failures, text)
        d.ok("DELETE", "/v1/jobs/%d" % victim)
    finally:
        node.close()
        shutil.rmtree(top, ignore_errors=True)


def boundary_node_addrs():
    """This host's IPv4 addresses but loopback (the probe tries 127.0.0.1 and 127.0.0.2 itself)."""
    out = os.popen("ip -4 -o addr show 2>/dev/null").read()
    return " ".join(a for a in re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out) if not a.startswith("127."))


if __name__ == "__main__":
    lack = missing()
    if lack:
        print("skip: the isolation suite needs %s" % lack)
        sys.exit(0)
    gpd.run([test_a_hostile_tenant_reaches_nothing_of_another], **DAEMON)
