#!/usr/bin/env python3
"""GPU health, drain, repair and return, end to end: the real gpupoold,
real gpupool-agent processes (sim backend) and real replicas.

Behaviours under test:
  - an XID the catalog says is the application's (13: restart_app) leaves
    the GPU in service and in its XID history;
  - XID 79 (catalog: reboot the node) takes the GPU out: its 2-replica gang
    is requeued whole onto spare capacity, the node is drained for it, the
    repair command (`gpupool-agent fault --reset`) runs once the GPU is
    idle, re-validation passes, the GPU returns and the node is undrained;
    every change is an audit row by the node's credential, every check a
    stored row (GET /v1/nodes/{name}/checks);
  - a diagnostic that fails, and one that runs past --health-timeout, mark
    their GPU out, and with --repair-attempts 1 it stays out (an operator
    is needed); `gpupool nodes` and `gpupool nodes show NAME` say so;
  - an operator's own drain is never undone by health.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402
from agentproc import Agent, end_replicas, sim_nodes, submit, wait_state, write_node_file  # noqa: E402

DAEMON = {"fleet": None, "extra": ["--node-lost-after", "15"]}


def start_agent(d, nodes, extra):
    node_file = write_node_file(d.dir, nodes)
    a = Agent(d, node_file, extra=["--no-cgroups", "--health-every", "1"] + list(extra)).start()
    a.wait_up([n["name"] for n in nodes])
    d.ok("PUT", "/v1/tenants/t", {})
    return a


def fault(a, node, *args):
    cli = [os.path.join(gpd.BIN, "gpupool-agent"), "fault", "--node-file", a.node_file, "--node", node] + list(args)
    subprocess.run(cli, check=True, capture_output=True, timeout=10)


def gpu(d, node, index=0):
    return d.ok("GET", "/v1/nodes/%s" % node)["gpus"][index]


def audit_rows(d, target_prefix):
    rows = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    return [r for r in rows if r["target"].startswith(target_prefix) and not r["action"].startswith("agent.")]


def test_an_application_xid_leaves_the_gpu_in_service_and_in_its_history(d):
    a = start_agent(d, sim_nodes("n", 1, gpus=1), [])
    try:
        fault(a, "n-0", "--gpu", "0", "--xid", "13")
        gpd.wait_for(lambda: gpu(d, "n-0")["health"]["xids"], 15, "XID 13 in the GPU's history")
        g = gpu(d, "n-0")
        assert g["healthy"] and g["health"]["healthy"], g
        assert g["health"]["xids"][0]["xid"] == 13 and g["health"]["xids"][0]["action"] == "restart_app", g
        checks = d.ok("GET", "/v1/nodes/n-0/checks?gpu=0&limit=1000")["checks"]
        xid = [c for c in checks if c["check"] == "xid"]
        assert xid and xid[0]["passed"] and "Graphics Engine Exception" in xid[0]["detail"], xid
        assert any(c["check"] == "sim" and c["passed"] for c in checks), checks
        assert not d.ok("GET", "/v1/nodes/n-0")["draining"]
        assert audit_rows(d, "node/n-0/gpu/") == []
    finally:
        a.stop()


def test_xid_79_drains_requeues_the_gang_whole_repairs_and_returns_the_gpu(d):
    nodes = sim_nodes("n", 3, gpus=1)
    repair = ("%s fault --node-file %s --node \"$GPUPOOL_NODE\" --gpu \"$GPUPOOL_GPU_INDEX\" --reset && echo reset"
              % (os.path.join(gpd.BIN, "gpupool-agent"), os.path.join(d.dir, "nodes.yaml")))
    a = start_agent(d, nodes, ["--repair-command", repair])
    job_id = None
    try:
        job_id = submit(d, replicas=2)
        gpd.wait_for(lambda: len(a.starts(job_id)) == 2, what="both replicas started")
        faulty = wait_state(d, job_id, "running")["placement"][0]["node"]
        fault(a, faulty, "--gpu", "0", "--xid", "79")
        gpd.wait_for(lambda: len(a.starts(job_id)) == 4, 20, "the gang started again")
        view = wait_state(d, job_id, "running")
        assert faulty not in [p["node"] for p in view["placement"]], view["placement"]
        assert all(faulty not in peers.split(",") for _, _, _, peers in a.starts(job_id)[2:]), a.starts(job_id)
        # the repair ran, re-validation passed: the GPU is back and the drain undone
        gpd.wait_for(lambda: [r["action"] for r in audit_rows(d, "node/%s" % faulty)] ==
                     ["gpu.unhealthy", "node.drain", "gpu.healthy", "node.undrain"], 30,
                     "unhealthy, drained, healthy, undrained")
        node = d.ok("GET", "/v1/nodes/%s" % faulty)
        assert node["gpus"][0]["healthy"] and not node["draining"], node
        health = node["gpus"][0]["health"]
        assert health["xids"][0]["xid"] == 79 and health["xids"][0]["action"] == "reboot_node", health
        checks = d.ok("GET", "/v1/nodes/%s/checks?gpu=0&limit=1000" % faulty)["checks"]
        kinds = [(c["check"], c["passed"]) for c in reversed(checks)]
        assert ("xid", False) in kinds and ("repair", True) in kinds, kinds
        assert kinds.index(("xid", False)) < kinds.index(("repair", True)), kinds
        repair_row = next(c for c in checks if c["check"] == "repair")
        assert repair_row["detail"] == "repair exited 0: reset", repair_row
        rows = audit_rows(d, "node/%s" % faulty)
        assert all(r["actor"] != "gpupoold" and r["role"] != "system" for r in rows), rows
        assert d.call("GET", "/v1/nodes/%s/checks?gpu=7" % faulty)[0] == 400
        assert d.call("GET", "/v1/nodes/nosuch/checks")[0] == 404
    finally:
        a.stop()
        end_replicas([a], [job_id] if job_id else [])


def test_a_failed_or_timed_out_diagnostic_takes_the_gpu_out_until_an_operator_acts(d):
    broken = os.path.join(d.dir, "broken")
    slow = os.path.join(d.dir, "slow")
    diag = 'if [ -e %s-"$GPUPOOL_NODE" ]; then echo "memory test failed on $CUDA_VISIBLE_DEVICES"; exit 3; fi' % broken
    burn = 'if [ -e %s-"$GPUPOOL_NODE" ]; then sleep 60; fi' % slow
    a = start_agent(d, sim_nodes("n", 2, gpus=1), ["--health-check", "memtest=" + diag, "--health-check",
                                                  "burn=" + burn, "--health-timeout", "2", "--repair-attempts", "1",
                                                  "--repair-command", "true"])
    try:
        uuid0 = gpu(d, "n-0")["uuid"]
        open(broken + "-n-0", "w").close()
        open(slow + "-n-1", "w").close()
        gpd.wait_for(lambda: not gpu(d, "n-0")["healthy"] and not gpu(d, "n-1")["healthy"], 30, "both GPUs out")
        # the repair (true) passes, re-validation fails again: out for good
        gpd.wait_for(lambda: "operator is needed" in (gpu(d, "n-0")["health"]["reason"] or ""), 30, "n-0 needs an operator")
        gpd.wait_for(lambda: "operator is needed" in (gpu(d, "n-1")["health"]["reason"] or ""), 30, "n-1 needs an operator")
        assert "memtest exited 3: memory test failed on %s" % uuid0 in gpu(d, "n-0")["health"]["reason"]
        assert "burn timed out after 2 s (killed)" in gpu(d, "n-1")["health"]["reason"]
        table = d.cli("nodes").stdout
        assert any(line.split()[0] == "n-0" and "0/1" in line.split() for line in table.splitlines()), table
        shown = d.cli("nodes", "show", "n-0").stdout
        assert "unhealthy" in shown and uuid0 in shown and "memtest exited 3" in shown, shown
        # the GPU stays out: its node is not drained (no drain_node, no --drain-on-gpu-failure)
        assert not d.ok("GET", "/v1/nodes/n-0")["draining"]
    finally:
        a.stop()


def test_an_operators_drain_is_never_undone_by_health(d):
    d.extra = DAEMON["extra"] + ["--drain-on-gpu-failure"]
    d.stop()
    d.start()
    repair = ("%s fault --node-file %s --node \"$GPUPOOL_NODE\" --gpu \"$GPUPOOL_GPU_INDEX\" --reset"
              % (os.path.join(gpd.BIN, "gpupool-agent"), os.path.join(d.dir, "nodes.yaml")))
    a = start_agent(d, sim_nodes("n", 2, gpus=1), ["--repair-command", repair])
    try:
        # --drain-on-gpu-failure: an ECC fault (no drain asked by the agent) drains, the return undrains
        fault(a, "n-0", "--gpu", "0", "--ecc-uncorrected", "2")
        gpd.wait_for(lambda: [r["action"] for r in audit_rows(d, "node/n-0")] ==
                     ["gpu.unhealthy", "node.drain", "gpu.healthy", "node.undrain"], 30, "drained and undrained")
        # an operator drains n-1; its GPU fails and returns: n-1 stays drained
        d.ok("POST", "/v1/nodes/n-1/drain", {"drain": True})
        fault(a, "n-1", "--gpu", "0", "--ecc-uncorrected", "1")
        gpd.wait_for(lambda: [r["action"] for r in audit_rows(d, "node/n-1/gpu")] == ["gpu.unhealthy", "gpu.healthy"],
                     30, "n-1's GPU out and back")
        view = d.ok("GET", "/v1/nodes/n-1")
        assert view["draining"] and view["drain"]["kind"] == "operator", view  # still the operator's, and says so
    finally:
        a.stop()


if __name__ == "__main__":
    gpd.run([
        test_an_application_xid_leaves_the_gpu_in_service_and_in_its_history,
        test_xid_79_drains_requeues_the_gang_whole_repairs_and_returns_the_gpu,
        test_a_failed_or_timed_out_diagnostic_takes_the_gpu_out_until_an_operator_acts,
        test_an_operators_drain_is_never_undone_by_health,
    ], **DAEMON)
