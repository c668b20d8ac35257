"""test_partitions.py - real network faults between agents and gpupoold (issue 38 section 2).

gpupoold runs in this namespace, listening on every address; each agent
runs in a network namespace of its own (`ip netns`), joined to this one by
a veth pair (host side 10.X.I.1, agent side 10.X.I.2).  Faults are made on
those links: nftables drop rules inside an agent's namespace (a partition,
both ways; 10 % of the agent's packets, drawn by nft's numgen: asymmetric
loss), and 500 ms of delay on everything gpupoold sends the agent, made by
a relay in this file (the test machines' kernel has no sch_netem, so
`tc netem` cannot be used there; the relay holds each chunk of gpupoold's
answers 500 ms before passing it on).

The partition fence (docs/operations.md "Partitions between agents and
gpupoold"): an agent that has had no answer for half of --node-lost-after
stops its replicas (signal, a quarter of --node-lost-after of grace, kill),
so the copy gpupoold places once it counts the node lost never starts
while the old replica runs.  The test measures that gap from the
processes themselves: each run appends "PID START_EPOCH_S" at its start to
its agent's checkpoint folder, and a watcher here samples every 20 ms
whether the old run's process still lives (an end seen no earlier than it
happened: the gap measured is never larger than the real one).

Needs root and `ip netns`: skipped, with one line, where either is missing.
Python standard library only.
"""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import agentproc  # noqa: E402
import gpd  # noqa: E402
from agentproc import Agent, alive, sim_nodes, submit, wait_state, write_node_file  # noqa: E402

TAG = "gpf%d" % (os.getpid() % 100000)
SUBNET = 100 + os.getpid() % 100

# One line per run ("PID START_S"), then run until SIGTERM or the release file.
RUN_THEN_WAIT = (
    'echo "$$ $(date +%s.%N)" >> "$GPUPOOL_CHECKPOINT_DIR/runs"; '
    'trap "exit 0" TERM; '
    'while [ ! -e "$GPUPOOL_CHECKPOINT_DIR/release" ]; do sleep 0.05; done')


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True, timeout=20)


class Link:
    """Namespace TAG-I with a veth pair to this one; faults made and cleared on it."""

    def __init__(self, index):
        self.ns = "%s-%d" % (TAG, index)
        self.host_if, self.ns_if = "%s%dh" % (TAG, index), "%s%da" % (TAG, index)
        self.host_ip, self.ns_ip = "10.%d.%d.1" % (SUBNET, index), "10.%d.%d.2" % (SUBNET, index)
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        sh("ip", "link", "set", self.ns_if, "netns", self.ns)
        sh("ip", "addr", "add", self.host_ip + "/24", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        self.exec("ip", "addr", "add", self.ns_ip + "/24", "dev", self.ns_if)
        self.exec("ip", "link", "set", self.ns_if, "up")
        self.exec("ip", "link", "set", "lo", "up")

    def exec(self, *cmd, check=True):
        return sh("ip", "netns", "exec", self.ns, *cmd, check=check)

    def cut(self):
        """Every packet between the agent and gpupoold dropped, both ways."""
        self.exec("nft", "add table inet gpfpart; "
                  "add chain inet gpfpart in { type filter hook input priority 0; policy drop; }; "
                  "add chain inet gpfpart out { type filter hook output priority 0; policy drop; }")

    def lose(self, percent):
        """percent % of the agent's packets to gpupoold dropped at random; none of gpupoold's."""
        self.exec("nft", "add table inet gpfloss; "
                  "add chain inet gpfloss out { type filter hook output priority 0; policy accept; }; "
                  "add rule inet gpfloss out ip daddr %s numgen random mod 100 < %d drop" % (self.host_ip, percent))

    def heal(self):
        self.exec("nft", "delete", "table", "inet", "gpfpart")

    def close(self):
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.ns, check=False)


class NsAgent(Agent):
    """An agent inside link's namespace, calling gpupoold at the host side's address."""

    def __init__(self, d, link, nodes, name, server=None):
        self.link, self.server = link, server
        super().__init__(d, write_node_file_named(d.dir, name, nodes), extra=["--no-cgroups", "--no-network-fence"],
                         name=name)

    def command(self):
        cmd = super().command()
        cmd[cmd.index("--server") + 1] = self.server or "http://%s:%d" % (self.link.host_ip, self.d.port)
        return ["ip", "netns", "exec", self.link.ns] + cmd

    def runs(self, job_id):
        """(pid, start epoch s) of each run of the job on this agent, in order."""
        try:
            with open(os.path.join(self.checkpoint_dir(job_id), "runs")) as f:
                return [(int(p), float(t)) for p, t in (line.split() for line in f if line.strip())]
        except OSError:
            return []


def write_node_file_named(directory, name, nodes):
    sub = os.path.join(directory, name + "-nodes")
    os.makedirs(sub, exist_ok=True)
    return write_node_file(sub, nodes)


class DelayRelay:
    """Listens on host:0 and passes each connection on to gpupoold; what gpupoold sends back is held
    delay_s before it goes on (in order).  .url: the address agents call."""

    def __init__(self, host, port, delay_s):
        self.port, self.delay_s = port, delay_s
        self.listener = socket.create_server((host, 0))
        self.url = "http://%s:%d" % (host, self.listener.getsockname()[1])
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                agent, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.port))
            threading.Thread(target=self.pipe, args=(agent, server, 0), daemon=True).start()
            threading.Thread(target=self.pipe, args=(server, agent, self.delay_s), daemon=True).start()

    @staticmethod
    def pipe(src, dst, delay_s):
        try:
            while True:
                data = src.recv(65536)
                if delay_s:
                    time.sleep(delay_s)  # one chunk at a time: each is 500 ms late, the order kept
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.listener.close()


class EndWatch:
    """Samples every 20 ms whether pid lives; .ended: the first time it was seen gone."""

    def __init__(self, pid):
        self.pid, self.ended = pid, None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while alive(self.pid):
            time.sleep(0.02)
        self.ended = time.time()


class NodeWatch:
    """Samples every 100 ms whether gpupoold has the nodes up; .downs: (time, node) of each sample not up."""

    def __init__(self, d, names):
        self.d, self.names, self.downs, self.stopping = d, names, [], False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            up = {n["name"] for n in self.d.ok("GET", "/v1/nodes")["nodes"] if n["up"]}
            self.downs += [(time.time(), n) for n in self.names if n not in up]
            time.sleep(0.1)

    def stop(self):
        self.stopping = True
        self.thread.join(5)


def fleet(d, count, relay=None):
    """count namespaces, each with an agent of one 1-GPU node (p0-0, p1-0, ...), calling gpupoold directly or
    through relay(link) (a URL); up, tenant t made."""
    links, agents = [], []
    os.chmod(d.dir, 0o755)
    join = agentproc.join_token(d)
    for i in range(count):
        links.append(Link(i))
        nodes = sim_nodes("p%d" % i, 1, gpus=1)
        agents.append(NsAgent(d, links[-1], nodes, "agent%d" % i, server=relay(links[-1]) if relay else None))
        agents[-1].join = join
        agents[-1].start()
    for i, a in enumerate(agents):
        a.wait_up(["p%d-0" % i])
    d.ok("PUT", "/v1/tenants/t", {})
    return links, agents


def teardown(links, agents, jobs):
    for a in agents:
        a.stop()
    for a in agents:
        for j in jobs:
            for pid, _ in a.runs(j):
                if alive(pid):
                    os.killpg(pid, 9)
    for link in links:
        link.close()


def running_on(d, job_id):
    return wait_state(d, job_id, "running")["placement"][0]["node"]


def live_runs(agents, job_id):
    return [pid for a in agents for pid, _ in a.runs(job_id) if alive(pid)]


def partitioned_lines(agent):
    return [line for line in agent.read_log(100000).splitlines() if "reason=partitioned" in line]


# ---- the scenarios ----

def test_a_partition_shorter_than_the_fence_is_invisible(d):
    """--node-lost-after 10: fence at 5 s.  A 1.5 s cut: the node stays up, the run goes on, heartbeats resume."""
    links, agents = fleet(d, 1)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT, checkpoint_grace_s=1)
        gpd.wait_for(lambda: agents[0].runs(job), 20, "the job started")
        watch = NodeWatch(d, ["p0-0"])
        links[0].cut()
        time.sleep(1.5)
        links[0].heal()
        before = d.ok("GET", "/v1/nodes/p0-0")["agent"]["last_seen"]
        gpd.wait_for(lambda: d.ok("GET", "/v1/nodes/p0-0")["agent"]["last_seen"] > before, 15, "a heartbeat after the cut")
        time.sleep(3)
        watch.stop()
        assert not watch.downs, watch.downs
        assert len(agents[0].runs(job)) == 1 and live_runs(agents, job), agents[0].runs(job)
        assert d.ok("GET", "/v1/jobs/%d" % job)["state"] == "running"
        assert not partitioned_lines(agents[0]), partitioned_lines(agents[0])
    finally:
        teardown(links, agents, [job] if job else [])


def cut_the_runs_node(d, links, agents, job):
    """Cuts the link of the agent running job; returns (that agent's index, its run's pid, the time of the cut)."""
    node = running_on(d, job)
    i = int(node[1:].split("-")[0])
    gpd.wait_for(lambda: agents[i].runs(job), 20, "the job started")
    pid = agents[i].runs(job)[0][0]
    links[i].cut()
    return i, pid, time.time()


def test_a_partition_past_node_lost_after_fences_the_run_before_its_copy_starts(d):
    """--node-lost-after 4: fence at 2 s, grace 1 s.  The cut node is lost, the job runs again on the other
    node, and the copy starts after the old run ended (gap >= 0, measured); healing brings the node back, its
    agent reports the stopped run, and only the copy runs."""
    links, agents = fleet(d, 2)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT, checkpoint_grace_s=30)
        i, pid, cut_at = cut_the_runs_node(d, links, agents, job)
        other = agents[1 - i]
        old = EndWatch(pid)
        gpd.wait_for(lambda: other.runs(job), 30, "the copy started on the other node")
        copy_pid, copy_start = other.runs(job)[0]
        gpd.wait_for(lambda: old.ended, 5, "the old run seen ended")
        gap = copy_start - old.ended
        print("partition: old run ended %.3f s after the cut, copy started %.3f s after it: gap %.3f s"
              % (old.ended - cut_at, copy_start - cut_at, gap), flush=True)
        assert gap >= 0, "the copy started %.3f s before the old run ended" % -gap
        assert partitioned_lines(agents[i]), agents[i].read_log()
        links[i].heal()
        agents[i].wait_up(["p%d-0" % i])
        time.sleep(2)  # its reports and a poll: reconcile done
        assert live_runs(agents, job) == [copy_pid], live_runs(agents, job)
        assert len(agents[i].runs(job)) == 1 and len(other.runs(job)) == 1
        assert "partition fence: gpupoold answers again" in agents[i].read_log(100000)
        assert running_on(d, job) == "p%d-0" % (1 - i)
    finally:
        teardown(links, agents, [job] if job else [])


def test_an_opted_out_run_overlaps_its_copy_only_until_the_heal(d):
    """keep_running_when_partitioned: the fence spares the run, its copy starts beside it; healing kills the
    stale run at the returning agent's first reconcile, and the overlap ends then."""
    links, agents = fleet(d, 2)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT, keep_running_when_partitioned=True)
        i, pid, _ = cut_the_runs_node(d, links, agents, job)
        other = agents[1 - i]
        old = EndWatch(pid)
        gpd.wait_for(lambda: other.runs(job), 30, "the copy started on the other node")
        assert old.ended is None and not partitioned_lines(agents[i])  # spared: it runs beside its copy
        healed = time.time()
        links[i].heal()
        gpd.wait_for(lambda: old.ended, 30, "the stale run killed after the heal")
        print("opted out: the stale run ended %.3f s after the heal" % (old.ended - healed), flush=True)
        agents[i].wait_up(["p%d-0" % i])
        time.sleep(2)
        assert live_runs(agents, job) == [other.runs(job)[0][0]], live_runs(agents, job)
    finally:
        teardown(links, agents, [job] if job else [])


def test_asymmetric_loss_and_half_a_second_of_delay_do_not_flap_the_node(d):
    """--node-lost-after 12 (heartbeat 3 s, fence 6 s): 10 % of the agent's packets lost, everything gpupoold
    sends it 500 ms late, for 15 s: the node is up at every sample, the run is never fenced nor started twice."""
    relays = []

    def relay(link):
        relays.append(DelayRelay(link.host_ip, d.port, 0.5))
        return relays[-1].url
    links, agents = fleet(d, 1, relay)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT)
        gpd.wait_for(lambda: agents[0].runs(job), 20, "the job started")
        links[0].lose(10)
        watch = NodeWatch(d, ["p0-0"])
        time.sleep(15)
        watch.stop()
        assert not watch.downs, watch.downs[:5]
        assert len(agents[0].runs(job)) == 1 and live_runs(agents, job), agents[0].runs(job)
        assert not partitioned_lines(agents[0]), partitioned_lines(agents[0])
        assert "registering again" not in agents[0].read_log(100000)
    finally:
        teardown(links, agents, [job] if job else [])
        for r in relays:
            r.close()


def test_an_agent_restarted_inside_the_partition_still_fences_in_time(d):
    """--node-lost-after 8: fence at 4 s.  The cut node's agent is killed (-9) and started again while cut off:
    it counts from gpupoold's last answer (STATE/NODE/partition), not from its own start, so the adopted run
    still ends before its copy starts."""
    links, agents = fleet(d, 2)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT)
        i, pid, cut_at = cut_the_runs_node(d, links, agents, job)
        other = agents[1 - i]
        old = EndWatch(pid)
        time.sleep(0.5)
        agents[i].kill9()
        time.sleep(0.5)
        agents[i].start()
        gpd.wait_for(lambda: other.runs(job), 30, "the copy started on the other node")
        gpd.wait_for(lambda: old.ended, 5, "the old run seen ended")
        gap = other.runs(job)[0][1] - old.ended
        print("restarted agent: old run ended %.3f s after the cut, gap %.3f s" % (old.ended - cut_at, gap),
              flush=True)
        assert gap >= 0, "the copy started %.3f s before the old run ended" % -gap
        assert old.ended - cut_at < 8, "fenced %.3f s after the cut" % (old.ended - cut_at)
        links[i].heal()
        agents[i].wait_up(["p%d-0" % i])
        time.sleep(2)
        assert live_runs(agents, job) == [other.runs(job)[0][0]], live_runs(agents, job)
    finally:
        teardown(links, agents, [job] if job else [])


def test_a_replica_whose_agent_died_in_the_partition_is_fenced_by_its_supervisor(d):
    """--node-lost-after 4: the cut node's agent is killed (-9) and stays dead.  The replica's supervisor reads
    the node's partition clock and stops it itself, before the copy starts."""
    links, agents = fleet(d, 2)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT)
        i, pid, cut_at = cut_the_runs_node(d, links, agents, job)
        agents[i].kill9()
        other = agents[1 - i]
        old = EndWatch(pid)
        gpd.wait_for(lambda: other.runs(job), 30, "the copy started on the other node")
        gpd.wait_for(lambda: old.ended, 5, "the old run seen ended")
        gap = other.runs(job)[0][1] - old.ended
        print("dead agent: old run ended %.3f s after the cut, gap %.3f s" % (old.ended - cut_at, gap), flush=True)
        assert gap >= 0, "the copy started %.3f s before the old run ended" % -gap
    finally:
        teardown(links, agents, [job] if job else [])


def test_with_no_partition_fence_a_cut_off_run_is_left_beside_its_copy(d):
    """gpupoold --no-partition-fence gives no terms: a run cut off past --node-lost-after is fenced neither by
    its agent nor by its supervisor (the site chose so), and runs beside its copy until the heal."""
    links, agents = fleet(d, 2)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT)
        i, pid, _ = cut_the_runs_node(d, links, agents, job)
        gpd.wait_for(lambda: agents[1 - i].runs(job), 30, "the copy started on the other node")
        time.sleep(1)
        assert alive(pid), "the cut-off run was stopped"
        assert "partition fence: replicas stop" not in agents[i].read_log(100000)
        links[i].heal()
        agentproc.wait_gone(pid)  # the returning agent kills it
    finally:
        teardown(links, agents, [job] if job else [])


def test_a_partition_between_the_fence_and_node_lost_after_requeues_the_fenced_run(d):
    """--node-lost-after 4: a 3 s cut, past the fence (2 s) but short of the loss.  The run ends cleanly on its
    SIGTERM (exit 0); its agent keeps silent until gpupoold counts the node lost, so the job is requeued and
    runs again, not taken as succeeded."""
    links, agents = fleet(d, 2)
    job = None
    try:
        job = submit(d, command=RUN_THEN_WAIT)
        i, pid, _ = cut_the_runs_node(d, links, agents, job)
        agentproc.wait_gone(pid, timeout=10)
        links[i].heal()
        gpd.wait_for(lambda: sum(len(a.runs(job)) for a in agents) == 2, 30, "the job run again")
        view = wait_state(d, job, "running")
        assert not any(h.get("to") == "succeeded" for h in view["history"]), view["history"]
        assert len(live_runs(agents, job)) == 1
    finally:
        teardown(links, agents, [job] if job else [])


LOST_AFTER = {
    test_a_partition_shorter_than_the_fence_is_invisible: "10",
    test_a_partition_past_node_lost_after_fences_the_run_before_its_copy_starts: "4",
    test_an_opted_out_run_overlaps_its_copy_only_until_the_heal: "4",
    test_an_agent_restarted_inside_the_partition_still_fences_in_time: "8",
    test_a_replica_whose_agent_died_in_the_partition_is_fenced_by_its_supervisor: "4",
    test_a_partition_between_the_fence_and_node_lost_after_requeues_the_fenced_run: "4",
    test_with_no_partition_fence_a_cut_off_run_is_left_beside_its_copy: "4",
    test_asymmetric_loss_and_half_a_second_of_delay_do_not_flap_the_node: "12",
}


def usable():
    if os.geteuid() != 0:
        return "needs root"
    probe = "%s-probe" % TAG
    try:
        if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
            return "needs `ip netns` (network namespaces)"
    except OSError:
        return "needs ip (Debian's iproute2)"
    ok = subprocess.run(["ip", "netns", "exec", probe, "nft", "list", "ruleset"], capture_output=True).returncode == 0
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None if ok else "needs nft (Debian's nftables) in a network namespace"


if __name__ == "__main__":
    why = usable()
    if why:
        print("skip: %s" % why)
        sys.exit(0)
    gpd.run(list(LOST_AFTER), make=lambda t: gpd.Daemon(
        fleet=None, extra=["--listen", "0.0.0.0:0", "--allow-plain-http", "--node-lost-after", LOST_AFTER[t]] +
        (["--no-partition-fence"] if t is test_with_no_partition_fence_a_cut_off_run_is_left_beside_its_copy else [])))
