#!/usr/bin/env python3
"""Image hints (docs/agent.md "Images"): gpupoold's long-poll answer names
the public images of the jobs likely to land on a node, and the agent
pre-pulls them, so a queued job's pull is a hit once it binds.  The real
gpupoold, a real root gpupool-agent (sim backend) and a real
docker-registry on loopback (tests/agent/test_image_store.py's helpers).

Behaviours under test:
  - the rule, as a node sees it in its heartbeat's and poll's answers (no
    root needed): the images of
    pending jobs that accept the node's GPU type and of jobs started on
    nodes of that type, top 4 by jobs (ties: the pending job's first),
    docker:// and oci: only, never an image whose registry the job's tenant
    holds a credential for;
  - a job queued behind a busy node (its one GPU taken) has its image
    pre-pulled by the agent before it binds (counted "warm"; the hint came
    with a heartbeat's answer), and its own pull once bound is a hit, no
    miss;
  - the image of a tenant that holds a registry credential for it is never
    hinted (a private image is warmed by its own job only): the agent never
    names it, its store never has it;
  - --no-image-hints: nothing is pre-pulled, the queued job's pull is a miss.

Root, cgroups, skopeo, umoci, docker-registry and busybox are needed:
skipped, with one line, otherwise.  The hint is made by a heartbeat's
answer (every 3 s here) at most every 5 s per GPU type and rides on it and
on the long-poll's answers (which a submit does not wake: a drain and
undrain of the node makes gpupoold answer at once, as a bind on it would).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "agent"))
import gpd  # noqa: E402
import test_node_boundary as boundary  # noqa: E402
from agentproc import submit, wait_state  # noqa: E402

DAEMON = {"fleet": None, "extra": ["--node-lost-after", "15"]}
AGENT = os.path.join(gpd.BIN, "gpupool-agent")


def skip_unless_usable():
    if not boundary.usable():
        print("skip: needs root and cgroups")
        return True
    missing = [t for t in ("skopeo", "umoci", "docker-registry", "busybox") if not shutil.which(t)]
    if missing:
        print("skip: needs %s" % ", ".join(missing))
        return True
    return False


class Registry:
    """A docker-registry on loopback holding busybox images NAME:v1."""

    def __init__(self):
        import test_image_store as images
        self.images = images
        self.root = tempfile.mkdtemp(prefix="gpupool-hints-", dir="/var/lib")
        self.proc, self.host = images.start_registry(self.root, "registry")

    def push(self, name):
        ref = "docker://%s/hints/%s:v1" % (self.host, name)
        self.images.push(self.images.build_image(self.root, name, "image %s" % name), ref)
        return ref

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def listing(node):
    r = subprocess.run([AGENT, "image", "list", "--store", os.path.join(node.state, "images")], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


def image_job(d, tenant, ref):
    body = {"tenant": tenant, "gpus": 1, "checkpoint_grace_s": 2, "image": ref, "command": ["/bin/busybox", "true"]}
    return d.ok("POST", "/v1/jobs", body)["id"]


def poke(d, node):
    """The node's version moves twice: its agent's poll answers now, with the hints as gpupoold last made
    them (at most 5 s old); None."""
    for drain in (True, False):
        d.ok("POST", "/v1/nodes/%s/drain" % node, {"drain": drain})
    time.sleep(0.2)


def scrape(sock):
    """{result: value} of gpupool_agent_image_pulls_total from the agent's /metrics on a Unix socket."""
    from test_agent_metrics import UnixHTTPConnection
    c = UnixHTTPConnection(sock)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    found = re.findall(r'^gpupool_agent_image_pulls_total\{result="(\w+)"\} (\d+)$', text, re.M)
    return {k: int(v) for k, v in found}


def busy_node(d, reg, tenants, extra=()):
    """A one-GPU node, pulling from reg, running a bare job that holds its GPU: (ctx, node, agent, job)."""
    node = boundary.Node(d, gpus=1, extra=["--insecure-registry", reg.host, "--containers", "optional"] + list(extra))
    a = node.start()
    for name in tenants:
        d.ok("PUT", "/v1/tenants/%s" % name, {})
    busy = submit(d, tenant=tenants[0])
    wait_state(d, busy, "running")
    return node, a, busy


def register(d, join, name, gpu_type, gpus):
    """A node registered as an agent would: (poll, heartbeat), each answering its JSON."""
    inventory = {"name": name, "gpu_type": gpu_type, "gpu_count": gpus, "zone": "z1", "block": "b-" + name,
                 "gpu_uuids": ["GPU-%s-%d" % (name, i) for i in range(gpus)], "gpu_mem_mib": 16384,
                 "cpu_millis": 32000, "mem_mib": 131072}
    token = d.ok("POST", "/v1/agents:register", {"node": inventory}, token=join)["token"]

    def call(method, what, body=None):
        status, out = d.call(method, "/v1/agents/%s/%s" % (name, what), body, token=token)
        assert status == 200, out
        return out
    return (lambda: call("GET", "assignments?after=0&wait=0")), (lambda: call("POST", "heartbeat", {}))


def test_the_hint_is_the_most_wanted_public_images_of_the_nodes_gpu_type(d):
    reg = "reg.example:5000"
    join = d.cli("token", "create", "--name", "rack", "--role", "join", "--nodes", "*", "--ttl", "1h",
                 json_out=True)["token"]
    (t4, t4_beat), (l4, l4_beat) = register(d, join, "t4-0", "T4", 2), register(d, join, "l4-0", "L4", 1)
    d.ok("PUT", "/v1/tenants/t", {"image_sources": ["docker://%s/" % reg, "dir:/srv/images/", "oci:/srv/oci/"]})
    d.ok("PUT", "/v1/tenants/p", {})
    d.ok("PUT", "/v1/registries/%s?tenant=p" % reg, {"username": "robot", "password": "s3cret-robot"})

    def job(tenant, types, image=None):
        body = {"tenant": tenant, "gpus": 1, "gpu_types": types, "command": ["true"]}
        body.update({"image": image} if image else {})
        return d.ok("POST", "/v1/jobs", body)["id"]
    ref = {n: "docker://%s/team/%s:1" % (reg, n) for n in "abcefgp"}
    started = [job("t", ["T4"], ref["g"]), job("t", ["T4"], ref["g"]), job("t", ["L4"])]
    gpd.wait_for(lambda: len(t4()["assignments"]) == 2 and len(l4()["assignments"]) == 1, 20, "three jobs bound")
    job("t", ["T4"], ref["a"])
    job("t", [], ref["a"])                   # any type
    job("t", ["T4"], ref["b"])
    job("t", ["L4"], ref["c"])               # not a T4's
    job("p", ["T4"], ref["p"])               # p holds a credential for reg: private
    job("t", ["T4"], "dir:/srv/images/x")    # no pull: never hinted
    job("t", ["T4"], "oci:/srv/oci/d:1")
    job("t", ["T4"], ref["e"])               # fifth and sixth by jobs: past the top 4
    job("t", ["T4"], ref["f"])
    want_t4 = [ref["a"], ref["g"], ref["b"], "oci:/srv/oci/d:1"]
    want_l4 = [ref["a"], ref["c"]]
    print("expected: a T4 node's hint %s, an L4 node's %s" % (want_t4, want_l4))
    seen = gpd.wait_for(lambda: (lambda h: h if h == (want_t4, want_l4) else None)(
        (t4_beat()["image_hints"], l4_beat()["image_hints"])), 15, "the hints of the queue (remade 5 s after the last)")
    print("seen: %s, %s" % seen)
    assert t4()["image_hints"] == want_t4, "a poll answers the hint the last heartbeat made"
    for j in started:
        d.ok("DELETE", "/v1/jobs/%d" % j)


def test_a_queued_jobs_image_is_warm_before_it_binds_and_a_private_one_is_never_hinted(d):
    if skip_unless_usable():
        return
    reg = Registry()
    node = None
    try:
        public, private = reg.push("public"), reg.push("private")
        sock = os.path.join(d.dir, "metrics.sock")
        node, a, busy = busy_node(d, reg, ("t", "p"), ["--metrics-listen", "unix:" + sock])
        d.ok("PUT", "/v1/registries/%s?tenant=p" % reg.host, {"username": "robot", "password": "s3cret-robot"})
        secret = image_job(d, "p", private)  # first: were it hinted, it would be pulled before the other
        queued = image_job(d, "t", public)
        # no poke: a submit wakes no poll, the heartbeat's answer carries the hint
        gpd.wait_for(lambda: "image hint: %s ready" % public in a.read_log(None), 30,
                     "the agent to pre-pull the queued job's image")
        seen = listing(node)
        print("expected: warm 1, hits 0, misses 0, only %s in the store; seen: warm %d, hits %d, misses %d, %s"
              % (public, seen["warm"], seen["hits"], seen["misses"], [i["ref"] for i in seen["images"]]))
        assert (seen["warm"], seen["hits"], seen["misses"]) == (1, 0, 0), seen
        assert [i["ref"] for i in seen["images"]] == [public], seen
        assert private not in a.read_log(None), "a tenant's private image was hinted"
        d.ok("DELETE", "/v1/jobs/%d" % secret)
        a.release(busy)
        wait_state(d, queued, ("succeeded", "failed"), timeout=60)
        seen = listing(node)
        print("expected: the queued job's pull a hit (hits 1, misses 0); seen: hits %d, misses %d"
              % (seen["hits"], seen["misses"]))
        assert (seen["hits"], seen["misses"]) == (1, 0), seen
        assert private not in a.read_log(None), "a tenant's private image was hinted"
        metrics = scrape(sock)
        print("expected: /metrics hit 1, miss 0, warm 1; seen: %s" % metrics)
        assert metrics == {"hit": 1, "miss": 0, "warm": 1}, metrics
    finally:
        if node:
            node.close()
        reg.close()


def test_no_image_hints_pulls_nothing_ahead(d):
    if skip_unless_usable():
        return
    reg = Registry()
    node = None
    try:
        public = reg.push("public")
        node, a, busy = busy_node(d, reg, ("t",), ["--no-image-hints"])
        queued = image_job(d, "t", public)
        for _ in range(8):
            poke(d, node.nodes[0]["name"])  # what a hinted agent takes to start a pull here, many times over
        assert "image hint" not in a.read_log(None), a.read_log()
        a.release(busy)
        wait_state(d, queued, ("succeeded", "failed"), timeout=60)
        seen = listing(node)
        print("expected: warm 0, hits 0, misses 1; seen: warm %d, hits %d, misses %d"
              % (seen["warm"], seen["hits"], seen["misses"]))
        assert (seen["warm"], seen["hits"], seen["misses"]) == (0, 0, 1), seen
    finally:
        if node:
            node.close()
        reg.close()


if __name__ == "__main__":
    gpd.run([test_the_hint_is_the_most_wanted_public_images_of_the_nodes_gpu_type,
             test_a_queued_jobs_image_is_warm_before_it_binds_and_a_private_one_is_never_hinted,
             test_no_image_hints_pulls_nothing_ahead], **DAEMON)
