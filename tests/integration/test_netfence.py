#!/usr/bin/env python3
"""The network fence between tenants (issue 31 section 3) as a hostile
tenant tries it: the real gpupoold, a real root gpupool-agent (sim
backend) and replicas that listen and connect.

Behaviours under test:
  - tenant b's replica cannot connect to tenant a's listening port on
    127.0.0.1, on another loopback address (127.0.0.2), on ::1 nor on the
    node's own address; a second job of tenant a (another uid) can, on all three;
    both reach the resolver of /etc/resolv.conf when this host does;
  - neither reaches a service of the node that is no replica (gpupoold
    on 127.0.0.1);
  - another host (a network namespace behind a veth pair) cannot connect
    to tenant a's port (no peer of it), and tenant b's replica cannot
    connect to a listener there (neither peer nor egress), where root on
    this host can;
  - the node's table (inet gpupool_NODE) holds a replica's rules while it
    runs and is gone once none runs;
  - after `kill -9` of the agent, a replica that ended meanwhile loses its
    rules at the restart, one still running keeps them (and still cannot
    be reached by tenant b);
  - an untrusted tenant's replica cannot reach a service of the node on
    127.0.0.3 until an admin adds it to its tenant's egress (a
    tenant-admin gets 403, bad entries 400); then a new job can;
  - tenant b's replica reaches tenant a's listening port only once an
    admin sets a's reach_from to [b] (a tenant-admin gets 403, bad
    entries 400 naming reach_from) and a's replica starts after it; a's
    replica still cannot reach b's, nor c's replica a's;
  - across nodes (gpupoold's side, no root needed): a's replica's
    assignment names the nodes where b's replicas run, and b's the nodes
    where a's run, once an admin sets a's reach_from to [b]; c's nothing;
  - an untrusted tenant's replica is refused by an agent whose fence is
    off (a stand-in nft that fails: the agent logs why), and runs with
    --no-network-fence (which removes the table an earlier agent left).

Root, cgroups and a working nft are needed: skipped, with one line,
otherwise.
"""
import contextlib
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
import test_node_boundary as boundary  # noqa: E402
from agentproc import submit, wait_state  # noqa: E402
from test_agent_api import FakeAgent, join_token, mine  # noqa: E402
from test_agent_api import submit as fake_submit  # noqa: E402
from test_node_boundary import log_text, usable, wait_log  # noqa: E402

DAEMON = {"fleet": None, "extra": ["--node-lost-after", "15"]}
# A node name and job uids of its own: another test's agent (its node n-0, its table
# gpupool_n_0, perhaps left by an agent killed with -9) names none of them.
NODE = "nf%d" % os.getpid()
TABLE = "gpupool_%s_0" % NODE
UID_BASE = 3000000000 + random.randrange(100000) * 1000
PORT = 24000 + os.getpid() % 5000

# The resolver of /etc/resolv.conf answers a query (run by a replica and by this test).
DNS = r'''
import socket


def dns_answers():
    ns = next((line.split()[1] for line in open("/etc/resolv.conf") if line.split()[:1] == ["nameserver"]), None)
    if not ns:
        return False
    q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
    s = socket.socket(socket.AF_INET6 if ":" in ns else socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    try:
        s.sendto(q, (ns, 53))
        return len(s.recv(512)) > 0
    except OSError:
        return False
'''

# A replica's program: `listen PORT` serves "hello" until the job's release
# file; `connect PORT HOST...` says per host whether it got "hello" (per
# HOST@PORT whether it connected), then whether DNS answers.
PROBE = DNS + r'''
import os
import sys

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "listen":
    s = socket.socket(socket.AF_INET6)  # both families: IPV6_V6ONLY off
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.listen(16)
    s.settimeout(0.2)
    print("listening", flush=True)
    while not os.path.exists(os.path.join(os.environ["GPUPOOL_CHECKPOINT_DIR"], "release")):
        try:
            c, _ = s.accept()
        except socket.timeout:
            continue
        c.sendall(b"hello")
        c.close()
    sys.exit(0)
for target in sys.argv[3:]:  # HOST (the listener's port) or HOST@PORT
    host, _, other_port = target.partition("@")
    try:
        c = socket.create_connection((host, int(other_port or port)), timeout=1.0)
        print(target, "open" if other_port or c.recv(5) == b"hello" else "odd", flush=True)
    except OSError as e:
        print(target, "blocked", type(e).__name__, flush=True)
print("dns", "answered" if dns_answers() else "silent", flush=True)
'''


def nft_works():
    try:
        return subprocess.run(["nft", "list", "tables"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def skip_unless_usable():
    if not usable():
        print("skip: needs root and cgroups")
        return True
    if not nft_works():
        print("skip: needs nft (Debian's nftables) that can list the ruleset")
        return True
    return False


def node_address():
    """This host's first global IPv4 address, or None."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        return line.split()[3].split("/")[0]
    return None


def table():
    """The node's table as nft lists it, or None when there is none."""
    r = subprocess.run(["nft", "list", "table", "inet", TABLE], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def fenced(job_id):
    t = table()
    return t is not None and ("out_%d" % (UID_BASE + job_id)) in t


def probe_file(node):
    """The probe, beside the agent's state (under /var/lib: a replica's private /tmp hides /tmp)."""
    path = os.path.join(node.state, "netprobe.py")
    with open(path, "w") as f:
        f.write(PROBE)
    os.chmod(path, 0o644)
    return path


def listen(d, node, tenant, port=PORT):
    return submit(d, tenant=tenant, command="exec /usr/bin/python3 %s listen %d" % (probe_file(node), port))


def connect(d, node, tenant, hosts, port=PORT):
    return submit(d, tenant=tenant, command="exec /usr/bin/python3 %s connect %d %s" % (probe_file(node), port,
                                                                                           " ".join(hosts)))


def host_dns_answers():
    namespace = {}
    exec(DNS, namespace)
    return namespace["dns_answers"]()


def results(a, job_id):
    """{host: "open"|"blocked", "dns": "answered"|"silent"} from a connector's log."""
    text = wait_log(a, job_id, r"\ndns |^dns ")
    return {line.split()[0]: line.split()[1] for line in text.splitlines() if len(line.split()) >= 2}


def running_node(d, tenants, extra=()):
    """A started root agent with one sim node of this test's own name and job uids, and these tenants."""
    return boundary.running_node(d, tenants, ["--job-uid-base", str(UID_BASE)] + list(extra), prefix=NODE)


def test_another_tenant_cannot_connect_and_its_own_can(d):
    if skip_unless_usable():
        return
    hosts = ["127.0.0.1", "127.0.0.2", "::1"] + ([node_address()] if node_address() else [])
    dns = "answered" if host_dns_answers() else "silent"
    with running_node(d, ("a", "b")) as (node, a):
        server = listen(d, node, "a")
        wait_log(a, server, "listening")
        assert fenced(server), table()
        host_service = "127.0.0.1@%d" % d.port  # gpupoold: a service of the node, no replica's
        own, other = connect(d, node, "a", hosts + [host_service]), connect(d, node, "b", hosts + [host_service])
        seen_own, seen_other = results(a, own), results(a, other)
        print("expected: tenant a's own job: open on %s; tenant b: blocked; both blocked at %s; dns %s"
              % (hosts, host_service, dns))
        print("seen: own %s, other %s" % (seen_own, seen_other))
        assert all(seen_own.get(h) == "open" for h in hosts), seen_own
        assert all(seen_other.get(h) == "blocked" for h in hosts), seen_other
        assert seen_own.get(host_service) == seen_other.get(host_service) == "blocked", (seen_own, seen_other)
        assert seen_own.get("dns") == dns and seen_other.get("dns") == dns, (seen_own, seen_other)
        for j in (own, other):
            wait_state(d, j, "succeeded")
        a.release(server)
        wait_state(d, server, "succeeded")
        gpd.wait_for(lambda: table() is None, 10, "the node's table gone once nothing runs")


# Another host: a network namespace joined to this one by a veth pair.
HERE, OTHER = "198.51.100.1", "198.51.100.2"


@contextlib.contextmanager
def other_host():
    """The namespace's name, or None where ip netns and veth are missing."""
    ns = "gpnf%d" % (os.getpid() % 100000)
    steps = [["ip", "netns", "add", ns], ["ip", "link", "add", ns + "a", "type", "veth", "peer", "name", ns + "b"],
             ["ip", "link", "set", ns + "b", "netns", ns], ["ip", "addr", "add", HERE + "/30", "dev", ns + "a"],
             ["ip", "link", "set", ns + "a", "up"],
             ["ip", "netns", "exec", ns, "ip", "addr", "add", OTHER + "/30", "dev", ns + "b"],
             ["ip", "netns", "exec", ns, "ip", "link", "set", ns + "b", "up"]]
    try:
        ok = all(subprocess.run(step, capture_output=True).returncode == 0 for step in steps)
        yield ns if ok else None
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)  # takes the veth pair with it
        subprocess.run(["ip", "link", "del", ns + "a"], capture_output=True)


def serve(prefix, host, port):
    """A root listener (prefix: a namespace's `ip netns exec NS`) that accepts and closes."""
    code = "import socket\ns = socket.create_server((%r, %d))\nwhile True:\n    s.accept()[0].close()" % (host, port)
    return subprocess.Popen(prefix + ["/usr/bin/python3", "-c", code])


def probe_as_root(node, ns, *args):
    """The probe run by root, in namespace ns (None: this host's): {target: result}."""
    ckpt = tempfile.mkdtemp(prefix="gpupool-nf-", dir="/var/lib")
    prefix = ["ip", "netns", "exec", ns] if ns else []
    try:
        out = subprocess.run(prefix + ["/usr/bin/python3", probe_file(node)] + list(args), capture_output=True,
                             text=True, timeout=30, env=dict(os.environ, GPUPOOL_CHECKPOINT_DIR=ckpt)).stdout
    finally:
        shutil.rmtree(ckpt, ignore_errors=True)
    return {line.split()[0]: line.split()[1] for line in out.splitlines() if len(line.split()) >= 2}


def test_another_host_reaches_no_replica_and_a_replica_no_stranger(d):
    if skip_unless_usable():
        return
    with other_host() as ns:
        if ns is None:
            print("skip: needs ip netns and veth links")
            return
        stranger = serve(["ip", "netns", "exec", ns], OTHER, PORT + 1)  # a host no replica may reach
        service = serve([], HERE, PORT + 2)  # root's, on this host: what the other host may reach
        try:
            with running_node(d, ("a", "b")) as (node, a):
                server = listen(d, node, "a")
                wait_log(a, server, "listening")
                inbound = probe_as_root(node, ns, "connect", str(PORT), HERE)
                control_in = probe_as_root(node, ns, "connect", str(PORT), "%s@%d" % (HERE, PORT + 2))
                outbound = results(a, connect(d, node, "b", ["%s@%d" % (OTHER, PORT + 1)]))
                control_out = probe_as_root(node, None, "connect", str(PORT), "%s@%d" % (OTHER, PORT + 1))
                print("expected: another host to tenant a's port blocked, a replica to a stranger blocked")
                print("seen: in %s (control %s), out %s (control %s)" % (inbound, control_in, outbound, control_out))
                assert inbound.get(HERE) == "blocked", inbound
                assert control_in.get("%s@%d" % (HERE, PORT + 2)) == "open", control_in
                assert outbound.get("%s@%d" % (OTHER, PORT + 1)) == "blocked", outbound
                assert control_out.get("%s@%d" % (OTHER, PORT + 1)) == "open", control_out
                a.release(server)
                wait_state(d, server, "succeeded")
        finally:
            for p in (stranger, service):
                p.kill()
                p.wait()


def test_after_an_agent_kill_live_rules_stay_and_dead_ones_go(d):
    if skip_unless_usable():
        return
    with running_node(d, ("a", "b")) as (node, a):
        server = listen(d, node, "a")
        other_server = submit(d, tenant="b", command='trap "exit 0" TERM; '
                              'while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/release" ]; do sleep 0.1; done')
        wait_log(a, server, "listening")
        gpd.wait_for(lambda: fenced(server) and fenced(other_server), 20, "both replicas fenced")
        a.kill9()
        a.release(other_server)  # it ends while no agent runs
        gpd.wait_for(lambda: os.path.exists(os.path.join(a.checkpoint_dir(other_server), "release")), 5, "release")
        assert fenced(other_server)  # nobody removed it yet
        a = node.start()
        gpd.wait_for(lambda: not fenced(other_server), 20, "the ended replica's rules removed at the restart")
        assert fenced(server), table()
        probe = connect(d, node, "b", ["127.0.0.1"])
        assert results(a, probe).get("127.0.0.1") == "blocked", log_text(a, probe)
        a.release(server)
        wait_state(d, server, "succeeded", timeout=30)
        gpd.wait_for(lambda: table() is None, 10, "the node's table gone once nothing runs")


def test_egress_opens_only_what_an_admin_adds(d):
    """An untrusted tenant's job cannot reach a service of the node on another loopback address
    (127.0.0.3, no replica's); its tenant-admin cannot open it (403), bad entries are 400 and
    change nothing; once an admin adds that address:port to the tenant's egress, a new job
    reaches it (and the tenant's view lists the destinations it inherits), while tenant a's
    replica listening on an address egress also opens still answers it nothing."""
    if skip_unless_usable():
        return
    target = "127.0.0.3@%d" % (PORT + 3)
    service = serve([], "127.0.0.3", PORT + 3)
    try:
        with running_node(d, ("eg", "eg/u", "a"), ["--containers", "optional"]) as (node, a):
            untrusted_tenant(d, "eg/u")
            server = listen(d, node, "a")
            wait_log(a, server, "listening")
            d.ok("PATCH", "/v1/tenants/eg", {"egress": ["192.0.2.0/24:53"]})
            before = results(a, connect(d, node, "eg/u", [target]))
            scoped = d.ok("POST", "/v1/tokens", {"name": "eg-admin", "role": "tenant-admin", "scope": "eg"})["token"]
            status, out = d.call("PATCH", "/v1/tenants/eg/u", {"egress": ["127.0.0.3"]}, token=scoped)
            print("expected: tenant-admin sets egress: 403 egress; seen: %d %s" % (status, out.get("error")))
            assert status == 403 and out["error"]["field"] == "egress", (status, out)
            for bad in ("127.0.0.3", ["127.0.0.3/8"], ["127.0.0.3:0"], ["localhost:80"], [3], ["1.2.3.4; flush ruleset"]):
                status, out = d.call("PATCH", "/v1/tenants/eg/u", {"egress": bad})
                print("expected: egress %r: 400 egress; seen: %d %s" % (bad, status, out.get("error")))
                assert status == 400 and out["error"]["field"] == "egress", (bad, status, out)
            assert d.ok("GET", "/v1/tenants/eg/u")["egress"] == ["192.0.2.0/24:53"]  # unchanged, inherited
            opened = ["127.0.0.3:%d" % (PORT + 3), "127.0.0.0/8:%d" % PORT]  # the second: tenant a's port
            d.ok("PATCH", "/v1/tenants/eg/u", {"egress": opened})
            assert d.ok("GET", "/v1/tenants/eg/u")["egress"] == opened + ["192.0.2.0/24:53"]
            after = results(a, connect(d, node, "eg/u", [target, "127.0.0.1"]))
            print("expected: before the admin's egress blocked, after open; tenant a's replica blocked")
            print("seen: %s, %s" % (before, after))
            assert before.get(target) == "blocked", before
            assert after.get(target) == "open", after
            assert after.get("127.0.0.1") == "blocked", after
            a.release(server)
            wait_state(d, server, "succeeded")
    finally:
        service.kill()
        service.wait()


def test_reach_from_lets_in_only_the_tenants_an_admin_names(d):
    """Tenant b's replica cannot connect to tenant a/srv's port; a's tenant-admin cannot let b in (403),
    bad entries are 400 and change nothing; once an admin sets a's reach_from to [b] (a/srv inherits it),
    a replica of a/srv started after it answers b's replica, while c's replica still gets nothing from
    it and a/srv's replica still cannot connect to b's port (one way)."""
    if skip_unless_usable():
        return
    with running_node(d, ("a", "a/srv", "b", "c")) as (node, a):  # two GPUs: at most two jobs at once
        before_server = listen(d, node, "a/srv")
        wait_log(a, before_server, "listening")
        before = results(a, connect(d, node, "b", ["127.0.0.1"]))
        a.release(before_server)
        wait_state(d, before_server, "succeeded")
        scoped = d.ok("POST", "/v1/tokens", {"name": "a-admin", "role": "tenant-admin", "scope": "a"})["token"]
        status, out = d.call("PATCH", "/v1/tenants/a/srv", {"reach_from": ["b"]}, token=scoped)
        print("expected: tenant-admin sets reach_from: 403 reach_from; seen: %d %s" % (status, out.get("error")))
        assert status == 403 and out["error"]["field"] == "reach_from", (status, out)
        for bad in ("b", [3], [""], ["/b"], ["b/../c"], ["b; flush ruleset"], ["b } accept"]):
            status, out = d.call("PATCH", "/v1/tenants/a", {"reach_from": bad})
            print("expected: reach_from %r: 400 reach_from; seen: %d %s" % (bad, status, out.get("error")))
            assert status == 400 and out["error"]["field"] == "reach_from", (bad, status, out)
        assert d.ok("GET", "/v1/tenants/a")["reach_from"] == []
        d.ok("PATCH", "/v1/tenants/a", {"reach_from": ["b"]})
        assert d.ok("GET", "/v1/tenants/a/srv")["reach_from"] == ["b"]  # inherited
        server = listen(d, node, "a/srv")
        wait_log(a, server, "listening")
        after = results(a, connect(d, node, "b", ["127.0.0.1", "::1"]))
        stranger = results(a, connect(d, node, "c", ["127.0.0.1"]))
        a.release(server)
        wait_state(d, server, "succeeded")
        b_server = listen(d, node, "b", PORT + 6)
        wait_log(a, b_server, "listening")
        back = results(a, connect(d, node, "a/srv", ["127.0.0.1@%d" % (PORT + 6)]))
        print("expected: b to a blocked before, open after; c to a blocked; a to b blocked")
        print("seen: before %s, after %s, c %s, a to b %s" % (before, after, stranger, back))
        assert before.get("127.0.0.1") == "blocked", before
        assert after.get("127.0.0.1") == "open" and after.get("::1") == "open", after
        assert stranger.get("127.0.0.1") == "blocked", stranger
        assert back.get("127.0.0.1@%d" % (PORT + 6)) == "blocked", back
        a.release(b_server)
        wait_state(d, b_server, "succeeded")


def test_reach_from_across_nodes_names_the_nodes_one_way(d):
    """Three fake agents' nodes, one 2-GPU job each of tenants a, b and c.  Before the admin's change no
    assignment names another node for reach_from; after a's reach_from is set to [b], the next answers to
    the running replicas say so: a's lets in b's node (reach_from_nodes), b's may reach a's node
    (reach_to_nodes), and nothing else, c's nothing at all."""
    for name in ("a", "b", "c"):
        d.ok("PUT", "/v1/tenants/%s" % name, {})
    join = join_token(d)
    agents = [FakeAgent(d, "t4-%d" % i, join=join) for i in (1, 2, 3)]
    jobs = {name: fake_submit(d, tenant=name, gpus=2) for name in ("a", "b", "c")}

    def entries():
        """{tenant: its replica's assignment, "node" added} once every job is bound."""
        out = {}
        for agent in agents:
            answer = agent.poll()
            for name, job_id in jobs.items():
                for entry in mine(answer, job_id):
                    out[name] = dict(entry, node=agent.name)
        return out if len(out) == 3 else None

    before = gpd.wait_for(entries, 20, "three jobs bound")
    d.ok("PATCH", "/v1/tenants/a", {"reach_from": ["b"]})
    after = entries()
    seen = {name: (e.get("reach_from"), e.get("reach_from_nodes"), e.get("reach_to_nodes")) for name, e in after.items()}
    print("expected: a lets in %s, b reaches %s, c nothing; seen %s"
          % (after["b"]["node"], after["a"]["node"], seen))
    for e in before.values():
        assert e["reach_from"] == [] and e["reach_from_nodes"] == [] and e["reach_to_nodes"] == [], e
    assert seen["a"] == (["b"], [after["b"]["node"]], []), seen
    assert seen["b"] == ([], [], [after["a"]["node"]]), seen
    assert seen["c"] == ([], [], []), seen


def stand_in_nft(directory):
    """An nft that always fails, as on a host without nf_tables."""
    path = os.path.join(directory, "nft")
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho 'no nf_tables here' >&2\nexit 1\n")
    os.chmod(path, 0o755)
    return path


def untrusted_tenant(d, name):
    """Tenant name made untrusted, its jobs allowed to run without an image where gpupoold has issue 31's
    container policy (an untrusted tenant's default there is "required")."""
    status, out = d.call("PUT", "/v1/tenants/%s" % name, {"trust": "untrusted", "container": "optional"})
    if status == 400 and out["error"]["field"] == "container":
        d.ok("PUT", "/v1/tenants/%s" % name, {"trust": "untrusted"})
    else:
        assert status < 300, (status, out)


def untrusted_job(d, extra, working_nft=False):
    """An agent with a failing nft (or the real one) and extra options, an untrusted tenant's job
    run to its end: (the agent's log, the job's log)."""
    bad = tempfile.mkdtemp(prefix="gpupool-nonft-", dir="/var/lib")
    try:
        nft = [] if working_nft else ["--nft", stand_in_nft(bad)]
        # a bare process (the fence, not the container, is under test here)
        with running_node(d, ("u",), nft + ["--containers", "optional"] + extra) as (node, a):
            untrusted_tenant(d, "u")
            job_id = submit(d, tenant="u", command="echo ran")
            wait_state(d, job_id, ("failed", "succeeded"))
            return a.read_log(), log_text(a, job_id) if a.replica_logs(job_id) else ""
    finally:
        shutil.rmtree(bad, ignore_errors=True)


def test_an_untrusted_replica_is_refused_when_the_fence_is_off(d):
    if skip_unless_usable():
        return
    agent_log, job_log = untrusted_job(d, [])
    assert "network fence off (nft refused the fence: no nf_tables here" in agent_log, agent_log
    assert "cannot start (field network): the network fence is off" in agent_log, agent_log
    assert "ran" not in job_log, job_log


def test_no_network_fence_runs_an_untrusted_replica_unfenced(d):
    if skip_unless_usable():
        return
    subprocess.run(["nft", "add", "table", "inet", TABLE], check=True)  # an earlier agent's
    agent_log, job_log = untrusted_job(d, ["--no-network-fence"], working_nft=True)
    assert "network fence off (--no-network-fence)" in agent_log, agent_log
    assert "ran" in job_log, (agent_log, job_log)
    assert table() is None, table()


if __name__ == "__main__":
    try:
        gpd.run([test_another_tenant_cannot_connect_and_its_own_can,
                 test_another_host_reaches_no_replica_and_a_replica_no_stranger,
                 test_after_an_agent_kill_live_rules_stay_and_dead_ones_go,
                 test_egress_opens_only_what_an_admin_adds,
                 test_reach_from_lets_in_only_the_tenants_an_admin_names,
                 test_reach_from_across_nodes_names_the_nodes_one_way,
                 test_an_untrusted_replica_is_refused_when_the_fence_is_off,
                 test_no_network_fence_runs_an_untrusted_replica_unfenced], **DAEMON)
    finally:
        if nft_works() and table() is not None:
            subprocess.run(["nft", "delete", "table", "inet", TABLE])
