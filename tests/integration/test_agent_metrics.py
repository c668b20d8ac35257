#!/usr/bin/env python3
"""The agent's GET /metrics (`gpupool-agent run --metrics-listen`,
docs/metrics.md "The agent's /metrics") against a real gpupoold and a real
agent (sim backend) running real replicas.

Behaviours under test:
  - one agent drives a T4 node and an A100 node in MIG mode and serves
    /metrics for both under dcgm-exporter's names (DCGM_FI_DEV_GPU_UTIL,
    _FB_USED, _FB_FREE, _POWER_USAGE, _GPU_TEMP, _XID_ERRORS,
    DCGM_FI_PROF_SM_ACTIVE) and labels (gpu, UUID, device, modelName,
    Hostname, and GPU_I_PROFILE / GPU_I_ID on the MIG instance), plus
    node, tenant and job: the GPU running a job carries its tenant and
    job, the idle GPU empty ones, the MIG instance its own job's;
  - the values are the sim's telemetry as the same heartbeat sent it to
    gpupoold (GET /v1/nodes/NAME shows it): utilization and SM activity,
    memory used and free (the GPU's memory less what is used), power,
    temperature; an XID injected on the idle GPU becomes its
    DCGM_FI_DEV_XID_ERRORS;
  - the scrape passes `promtool check metrics` (Debian's prometheus
    package; skipped, saying so, where promtool is absent);
  - a --metrics-listen that is not HOST:PORT is a bad command line (exit 2);
  - (issue 29) a TCP listener needs --metrics-token-file: a scrape without
    the token, or with another, is 401; ":PORT" listens on loopback only; a
    token file other users may read is refused; unix:PATH is a socket of
    mode 0600 that answers without a token.
"""
import http.client
import os
import re
import shutil
import socket
import subprocess
import stat
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpd  # noqa: E402
from agentproc import Agent, end_replicas, submit, wait_state, write_node_file  # noqa: E402

AGENT_BIN = os.path.join(gpd.BIN, "gpupool-agent")
PROMTOOL = shutil.which("promtool")
SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\} (\S+)$')
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
NAMES = ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
         "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_SM_ACTIVE"]
T4_MEM = 16384
NODES = [{"name": "t4-0", "gpu_type": "T4", "gpus": 2, "block": "b", "gpu_mem_mib": T4_MEM},
         {"name": "a100m", "gpu_type": "A100", "gpus": 1, "block": "b", "gpu_mem_mib": 81920, "sharing": "mig"}]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TOKEN = "metrics-" + "5" * 32


def token_file(d, mode=0o600, name="metrics.token", token=TOKEN):
    path = os.path.join(d.dir, name)
    with open(path, "w") as f:
        f.write(token + "\n")
    os.chmod(path, mode)
    return path


def scrape(port, token=TOKEN):
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % port)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
        return r.read().decode()


def samples(text):
    """[(name, {labels}, value)] of every sample line."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        out.append((m.group(1), dict(LABEL.findall(m.group(2))), float(m.group(3))))
    return out


def series(rows, name, **labels):
    return [(lb, v) for n, lb, v in rows if n == name and all(lb.get(k) == w for k, w in labels.items())]


# dcgm-exporter's own label names (UUID, modelName, Hostname, GPU_I_*) are not snake_case: promtool's lint
# says so for each metric (exit 3) and so it does for dcgm-exporter's scrape.  That is the one problem
# allowed; a parse error (exit 1) or any other lint problem fails.
CAMEL = "label names should be written in 'snake_case' not 'camelCase'"


def promtool_check(text):
    if not PROMTOOL:
        print("skip promtool check: promtool not installed (Debian package prometheus)")
        return
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    problems = [line for line in (p.stdout + p.stderr).splitlines() if line.strip()]
    assert p.returncode in (0, 3) and all(line.endswith(CAMEL) for line in problems), p.stdout + p.stderr
    assert {line.split()[0] for line in problems} <= set(NAMES), problems


def telemetry(d, node):
    """{gpu index: sample} as the node's last heartbeat sent it to gpupoold."""
    agent = d.ok("GET", "/v1/nodes/" + node)["agent"] or {}
    return {g["index"]: g for g in agent.get("gpus") or []}


def t4_matches(rows, tele, busy, idle):
    """The T4's series say what its last heartbeat said (None while a heartbeat lies between)."""
    for index in (busy, idle):
        g = tele.get(index)
        if not g or g["sm_active_pct"] is None:
            return None
        want = {"DCGM_FI_DEV_GPU_UTIL": g["sm_active_pct"], "DCGM_FI_DEV_FB_USED": g["memory_used_mib"],
                "DCGM_FI_DEV_FB_FREE": T4_MEM - g["memory_used_mib"], "DCGM_FI_DEV_POWER_USAGE": g["power_w"],
                "DCGM_FI_DEV_GPU_TEMP": g["temperature_c"], "DCGM_FI_PROF_SM_ACTIVE": g["sm_active_pct"] / 100}
        for name, value in want.items():
            got = series(rows, name, node="t4-0", gpu=str(index))
            if len(got) != 1 or abs(got[0][1] - value) > 1e-9:
                return None
    return True


def wait_consistent(d, port, busy, idle):
    """A scrape between two equal ones of gpupoold's view: the same heartbeat's sample."""
    def once():
        before = telemetry(d, "t4-0")
        text = scrape(port)
        if telemetry(d, "t4-0") != before:
            return None
        return text if t4_matches(samples(text), before, busy, idle) else None
    return gpd.wait_for(once, 30, "a scrape matching the heartbeat's telemetry")


def start_agent(d, port):
    node_file = write_node_file(d.dir, NODES)
    a = Agent(d, node_file, extra=["--metrics-listen", "127.0.0.1:%d" % port, "--metrics-token-file",
                                   token_file(d), "--heartbeat-s", "1", "--no-cgroups"]).start()
    a.wait_up(["t4-0", "a100m"])
    return a


def test_the_agent_serves_dcgm_metrics_with_tenant_and_job_of_each_replica(d):
    d.ok("PUT", "/v1/tenants/ml", {})
    d.ok("PUT", "/v1/tenants/nlp", {})
    port = free_port()
    a = start_agent(d, port)
    jobs = []
    try:
        j = submit(d, tenant="ml", gpu_types=["T4"])
        k = submit(d, tenant="nlp", gpu_types=["A100"], share={"mig": "1g.10gb"})
        jobs = [j, k]
        t4_gpu = wait_state(d, j, "running")["placement"][0]["gpus"][0]
        wait_state(d, k, "running")
        gpus = [g["uuid"] for g in d.ok("GET", "/v1/nodes/t4-0")["gpus"]]
        busy = gpus.index(t4_gpu)
        idle = 1 - busy
        gpd.wait_for(lambda: series(samples(scrape(port)), "DCGM_FI_DEV_FB_USED", tenant="nlp"), 30,
                     "the MIG replica's series")
        # gpupoold says running at the bind; the agent labels a GPU once its replica started there
        gpd.wait_for(lambda: series(samples(scrape(port)), "DCGM_FI_DEV_GPU_TEMP", tenant="ml"), 30,
                     "the T4 replica's series")
        text = wait_consistent(d, port, busy, idle)
        promtool_check(text)
        rows = samples(text)
        for name in NAMES:
            assert series(rows, name, node="t4-0"), (name, text)
            assert "# TYPE %s gauge" % name in text, name
        [(lb, _)] = series(rows, "DCGM_FI_DEV_GPU_TEMP", node="t4-0", gpu=str(busy))
        assert lb == {"gpu": str(busy), "UUID": t4_gpu, "device": "nvidia%d" % busy, "modelName": "T4",
                      "Hostname": "t4-0", "node": "t4-0", "tenant": "ml", "job": str(j),
                      **({"pci_bus_id": lb["pci_bus_id"]} if "pci_bus_id" in lb else {})}, lb
        [(lb, _)] = series(rows, "DCGM_FI_DEV_GPU_TEMP", node="t4-0", gpu=str(idle))
        assert (lb["tenant"], lb["job"], lb["UUID"]) == ("", "", gpus[idle]), lb
        [(lb, xid)] = series(rows, "DCGM_FI_DEV_XID_ERRORS", node="t4-0", gpu=str(busy))
        assert xid == 0, xid
        # the MIG instance: its profile and GPU instance id, its own job; the GPU's row is idle
        [(lb, used)] = series(rows, "DCGM_FI_DEV_FB_USED", node="a100m", tenant="nlp")
        assert (lb["GPU_I_PROFILE"], lb["job"], lb["modelName"], lb["Hostname"]) == ("1g.10gb", str(k), "A100",
                                                                                    "a100m"), lb
        inst = d.ok("GET", "/v1/nodes/a100m")["gpus"][0]
        assert lb["UUID"] == inst["uuid"] and int(lb["GPU_I_ID"]) >= 0, (lb, inst)
        [(_, free)] = series(rows, "DCGM_FI_DEV_FB_FREE", node="a100m", tenant="nlp")
        assert used >= 0 and free > 0, (used, free)
        whole = [lb for lb, _ in series(rows, "DCGM_FI_DEV_GPU_TEMP", node="a100m")]
        assert len(whole) == 1 and "GPU_I_ID" not in whole[0] and whole[0]["tenant"] == "", whole
        assert not series(rows, "DCGM_FI_DEV_GPU_UTIL", GPU_I_ID=lb["GPU_I_ID"]), "no utilization per instance"
        # an XID on the idle GPU: its last XID, as dcgm-exporter shows it
        subprocess.run([AGENT_BIN, "fault", "--node-file", a.node_file, "--node", "t4-0", "--gpu", str(idle),
                        "--xid", "45"], check=True)
        gpd.wait_for(lambda: [v for _, v in series(samples(scrape(port)), "DCGM_FI_DEV_XID_ERRORS", node="t4-0",
                                                   gpu=str(idle))] == [45.0], 30, "XID 45 on the idle GPU")
    except Exception:
        sys.stderr.write("---- agent log ----\n" + a.read_log()[-6000:])
        raise
    finally:
        a.stop()
        end_replicas([a], jobs)


def test_a_metrics_listen_that_is_not_host_port_is_a_bad_command_line(d):
    node_file = write_node_file(d.dir, NODES[:1])
    p = subprocess.run([AGENT_BIN, "run", "--server", d.url, "--backend", "sim",
                        "--node-file", node_file, "--state-dir", os.path.join(d.dir, "st"), "--metrics-listen",
                        "9400"], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, GPUPOOL_JOIN_TOKEN="x"))
    assert p.returncode == 2 and "--metrics-listen" in p.stderr and "HOST:PORT" in p.stderr, (p.returncode,
                                                                                             p.stderr)


def agent_run(d, *extra):
    """gpupool-agent run with extra options until it exits (a bad command line) or 20 s pass."""
    node_file = write_node_file(d.dir, NODES[:1])
    return subprocess.run([AGENT_BIN, "run", "--server", d.url, "--join-token-file", token_file(d, name="join", token="x"), "--backend",
                           "sim", "--node-file", node_file, "--state-dir", os.path.join(d.dir, "st")] + list(extra),
                          capture_output=True, text=True, timeout=20)


def listening_on(port):
    """The local addresses of the TCP sockets listening on port (/proc/net/tcp: hex, little-endian)."""
    out = []
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            addr, p = local.split(":")
            if int(p, 16) == port and state == "0A":
                out.append(".".join(str(int(addr[i:i + 2], 16)) for i in (6, 4, 2, 0)))
    return out


def status_of(port, token):
    try:
        scrape(port, token)
        return 200
    except urllib.error.HTTPError as e:
        return e.code


def test_metrics_need_the_token_and_listen_on_loopback_by_default(d):
    p = agent_run(d, "--metrics-listen", "127.0.0.1:9400")
    assert p.returncode == 2 and "--metrics-token-file" in p.stderr, (p.returncode, p.stderr)
    p = agent_run(d, "--metrics-listen", ":9400", "--metrics-token-file", token_file(d, 0o644))
    assert p.returncode == 1 and "other users may read it" in p.stderr, (p.returncode, p.stderr)
    port = free_port()
    node_file = write_node_file(d.dir, NODES[:1])
    a = Agent(d, node_file, extra=["--metrics-listen", ":%d" % port, "--metrics-token-file", token_file(d),
                                   "--heartbeat-s", "1", "--no-cgroups"]).start()
    try:
        a.wait_up(["t4-0"])
        gpd.wait_for(lambda: "DCGM_FI_DEV_GPU_TEMP" in scrape(port), 30, "a scrape with the token")
        assert status_of(port, None) == 401 and status_of(port, "metrics-" + "6" * 32) == 401
        assert listening_on(port) == ["127.0.0.1"], listening_on(port)
    except Exception:
        sys.stderr.write("---- agent log ----\n" + a.read_log()[-6000:])
        raise
    finally:
        a.stop()


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


def test_a_unix_socket_is_0600_and_answers_without_a_token(d):
    sock = os.path.join(d.dir, "metrics.sock")
    node_file = write_node_file(d.dir, NODES[:1])
    a = Agent(d, node_file, extra=["--metrics-listen", "unix:" + sock, "--heartbeat-s", "1",
                                   "--no-cgroups"]).start()
    try:
        a.wait_up(["t4-0"])
        assert stat.S_ISSOCK(os.stat(sock).st_mode) and stat.S_IMODE(os.stat(sock).st_mode) == 0o600

        def scraped():
            c = UnixHTTPConnection(sock)
            c.request("GET", "/metrics")
            r = c.getresponse()
            return r.status == 200 and "DCGM_FI_DEV_GPU_TEMP" in r.read().decode()
        gpd.wait_for(scraped, 30, "a scrape over the socket")
    finally:
        a.stop()
    assert not os.path.exists(sock)


if __name__ == "__main__":
    gpd.run([
        test_the_agent_serves_dcgm_metrics_with_tenant_and_job_of_each_replica,
        test_a_metrics_listen_that_is_not_host_port_is_a_bad_command_line,
        test_metrics_need_the_token_and_listen_on_loopback_by_default,
        test_a_unix_socket_is_0600_and_answers_without_a_token,
    ], fleet=None)
