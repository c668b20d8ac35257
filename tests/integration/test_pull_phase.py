#!/usr/bin/env python3
"""A replica's image pull is a visible phase of its job (issue 31 section 1).

A real gpupoold, a real agent (sim backend, runc) and a real
docker-registry on loopback (tests/agent/test_image_store.py's helpers),
reached through a gate: a TCP proxy that holds the registry's answers
after 8 MiB, then after 20 MiB, until the test has seen the job in each
step, so the pull is slow exactly as long as the test looks and never
for a fixed time.  Each test prints what it expected and what it saw:
  - a job with a ~30 MiB image: GET /v1/jobs/{id} carries "pull" with
    growing done_bytes while the pull runs; `gpupool jobs` says "pulling
    image", `gpupool job ID` "pulling image docker://..., X MiB of Y MiB";
    then it runs; its history has the start row "N s from bind, of which
    M s pulling docker://..."; the agent's /metrics counts the start with
    a pull;
  - an image the registry does not have: the job fails, reason
    image_pull, and `gpupool job ID` shows "not started: image pull
    failed (not_found): ...";
  - a registry that accepts the connection and never answers, with
    --pull-timeout-s 3: the job fails the same way ("timed out"), no hang.
Skipped (77) with one line when not root or runc, skopeo, umoci,
docker-registry or busybox is missing.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
import agentproc  # noqa: E402
import gpd  # noqa: E402

TOOLS = ("runc", "skopeo", "umoci", "docker-registry", "busybox")
CGROUP_PARENT = "gpupool-pulltest-%d" % os.getpid()
MIB = 1 << 20


def check(what, expected, seen):
    print("expected: %s: %s" % (what, expected))
    print("seen:     %s" % str(seen)[:400])


def lines_with(text, *words):
    """The lines of a command's output that hold any of words."""
    return [ln.strip() for ln in text.splitlines() if any(w in ln for w in words)]


class Gate:
    """A TCP proxy in front of the registry that stops forwarding its
    answers (all connections together) at each mark until released."""

    def __init__(self, target_port, marks):
        self.target = ("127.0.0.1", target_port)
        self.marks = list(marks)
        self.sent = 0
        self.cond = threading.Condition()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(32)
        self.host = "127.0.0.1:%d" % self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def release(self):
        with self.cond:
            self.marks.pop(0)
            self.cond.notify_all()

    def open_all(self):
        with self.cond:
            self.marks = []
            self.cond.notify_all()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            threading.Thread(target=self.pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self.pipe, args=(upstream, client, True), daemon=True).start()

    def pipe(self, src, dst, gated):
        try:
            while True:
                data = src.recv(64 * 1024)
                if not data:
                    break
                if gated:
                    with self.cond:
                        self.cond.wait_for(lambda: not self.marks or self.sent < self.marks[0])
                        self.sent += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def build_big_image(root):
    """An OCI layout with tag v1: busybox-static with its sh, and 30 MiB of
    random bytes (they do not compress: the layer is ~30 MiB on the wire)."""
    files = os.path.join(root, "rootfs")
    for d in ("bin", "proc", "sys", "dev", "tmp", "etc"):
        os.makedirs(os.path.join(files, d))
    shutil.copy(shutil.which("busybox"), os.path.join(files, "bin", "busybox"))
    for applet in ("sh", "cat", "echo", "sleep"):
        os.symlink("busybox", os.path.join(files, "bin", applet))
    with open(os.path.join(files, "big"), "wb") as f:
        f.write(os.urandom(30 * MIB))
    with open(os.path.join(files, "marker"), "w") as f:
        f.write("from-the-big-image\n")
    layout = os.path.join(root, "layout")
    quiet = {"stdout": subprocess.DEVNULL, "check": True}
    subprocess.run(["umoci", "init", "--layout", layout], **quiet)
    subprocess.run(["umoci", "new", "--image", layout + ":v1"], **quiet)
    subprocess.run(["umoci", "insert", "--image", layout + ":v1", files, "/"], **quiet)
    return layout


def job(d, job_id):
    return d.ok("GET", "/v1/jobs/%d" % job_id)


def scrape(path):
    """GET /metrics on the agent's unix socket."""
    class Conn(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(path)
    c = Conn("localhost", timeout=10)
    c.request("GET", "/metrics")
    return c.getresponse().read().decode()


def test_the_pull_is_a_phase_with_growing_bytes_then_it_runs(d, agent, gate, metrics):
    ref = "docker://%s/t/big:v1" % gate.host
    job_id = agentproc.submit(d, image=ref, command="cat /marker; echo ran-after-the-pull")
    first = gpd.wait_for(lambda: (lambda p: p if p and p["done_bytes"] > 0 else None)(job(d, job_id).get("pull")),
                         60, "the job's pull with bytes")
    check("GET /v1/jobs/{id} while held at 8 MiB: pull with image, bytes, a total", (ref, True, True),
          (first["image"], first["done_bytes"] > 0, first["total_bytes"] >= 30 * MIB))
    assert first["image"] == ref and first["total_bytes"] >= 30 * MIB and first["started_at"] > 0, first
    view = job(d, job_id)
    assert view["state"] == "running" and view["placement"][0]["pull"]["image"] == ref, view
    table = d.cli("jobs").stdout
    check("gpupool jobs", "pulling image", lines_with(table, "STATE", "pulling"))
    assert "pulling image" in table, table
    one = d.cli("job", str(job_id)).stdout
    check("gpupool job ID", "pull  pulling image %s, ... MiB of ... MiB" % ref, lines_with(one, "state", "pull"))
    assert ("pulling image %s, " % ref) in one and " MiB of 3" in one, one
    gate.release()
    grown = gpd.wait_for(lambda: (lambda p: p if p and p["done_bytes"] > first["done_bytes"] else None)(
        job(d, job_id).get("pull")), 60, "the pull's bytes to grow")
    check("held again at 20 MiB: more bytes", "> %d" % first["done_bytes"], grown["done_bytes"])
    gate.open_all()
    assert agentproc.wait_state(d, job_id, "succeeded", timeout=120)
    view = job(d, job_id)
    assert "pull" not in view, view
    starts = [h["reason"] for h in view["history"] if h["kind"] == "start"]
    check("the history's start row", "started, pid N, X s from bind, of which Y s pulling " + ref, starts)
    assert len(starts) == 1 and " s from bind, of which " in starts[0] and starts[0].endswith("pulling " + ref), starts
    text = scrape(metrics)
    line = 'gpupool_agent_replica_start_seconds_count{image_pull="true"} 1'
    check("the agent's /metrics", line, [ln for ln in text.splitlines() if "_count" in ln])
    assert line in text, text


def failed_start(d, ref):
    job_id = agentproc.submit(d, image=ref, command="echo never")
    agentproc.wait_state(d, job_id, "failed", timeout=60)
    return job_id, d.cli("job", str(job_id)).stdout


def test_an_image_the_registry_lacks_ends_the_job_saying_why(d, agent, gate, metrics):
    ref = "docker://%s/t/absent:v1" % gate.host
    job_id, text = failed_start(d, ref)
    check("gpupool job ID of a missing image", "image_pull, not started: image pull failed (not_found)",
          lines_with(text, "state", "exit"))
    assert "(image_pull)" in text and "not started: image pull failed (not_found)" in text, text
    assert "pull" not in job(d, job_id), job(d, job_id)


def test_a_registry_that_never_answers_times_out(d, agent, gate, metrics, silent):
    ref = "docker://%s/t/never:v1" % silent
    job_id, text = failed_start(d, ref)
    check("gpupool job ID, a silent registry, --pull-timeout-s 3", "image_pull, not started ... timed out",
          lines_with(text, "state", "exit"))
    assert "(image_pull)" in text and "not started: image pull failed (other)" in text and "timed out" in text, text


def main():
    missing = [t for t in TOOLS if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        print("SKIP test_pull_phase: needs root and %s" % ", ".join(missing or TOOLS))
        return 77
    import test_image_store as images  # the registry helpers
    top = tempfile.mkdtemp(prefix="gppull-", dir="/var/tmp")
    reg, host = images.start_registry(top, "registry")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    silent_host = "127.0.0.1:%d" % silent.getsockname()[1]
    d = gpd.Daemon(fleet=None)
    d.start()
    d.ok("PUT", "/v1/tenants/t", {})
    state = tempfile.mkdtemp(prefix="gpupool-pull-", dir="/var/lib")
    os.chmod(state, 0o755)
    metrics = os.path.join(state, "metrics.sock")
    gate = Gate(int(host.rsplit(":", 1)[1]), [8 * MIB, 20 * MIB])
    nodes = agentproc.sim_nodes("p", 1)

    def agent_args(pull_timeout_s):
        return ["--cgroup-parent", CGROUP_PARENT, "--heartbeat-s", "1", "--pull-timeout-s", str(pull_timeout_s),
                "--metrics-listen", "unix:" + metrics, "--insecure-registry", gate.host,
                "--insecure-registry", silent_host]
    failed = 0
    try:
        images.push(build_big_image(top), "docker://%s/t/big:v1" % host)
        cases = [("the pull is a phase", test_the_pull_is_a_phase_with_growing_bytes_then_it_runs, agent_args(60), ()),
                 ("a missing image", test_an_image_the_registry_lacks_ends_the_job_saying_why, agent_args(60), ()),
                 ("a silent registry", test_a_registry_that_never_answers_times_out, agent_args(3), (silent_host,))]
        for name, fn, args, more in cases:
            agent = agentproc.Agent(d, agentproc.write_node_file(d.dir, nodes), state_dir=state, extra=args).start()
            try:
                agent.wait_up([n["name"] for n in nodes])
                fn(d, agent, gate, metrics, *more)
                print("ok", name)
            except Exception as e:  # noqa: BLE001
                failed += 1
                print("FAIL %s: %s\nagent log:\n%s" % (name, e, agent.read_log()))
            finally:
                gate.open_all()
                agent.stop()
    finally:
        d.stop()
        d.cleanup()
        reg.kill()
        reg.wait()
        silent.close()
        shutil.rmtree(top, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        import test_containers
        test_containers.remove_cgroup_parent(CGROUP_PARENT)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
