#!/usr/bin/env python3
"""gpupool-agent's commands on a sim node (no daemon needed):
  - `inventory` prints the registration JSON: the node as the node codec
    writes it, and per-GPU detail with UUIDs that stay the same run to run;
  - `fault` appends to the fault file, and `telemetry` counts what is there
    (a lost GPU, ECC totals); a bad fault is refused naming the field and
    nothing is written;
  - `--help`, `--version` and a bad command line.
GP_BIN names the folder with the binaries (ctest sets it).
"""
import json
import os
import subprocess
import sys
import tempfile

AGENT = os.path.join(os.environ.get("GP_BIN", "build/bin"), "gpupool-agent")

NODES = """\
nodes:
  - name: h100
    count: 2
    block: blk-a
    gpu_type: H100
    gpus: 8
    gpu_mem_mib: 81920
  - name: a100-mig
    gpu_type: A100
    gpus: 4
    gpu_mem_mib: 81920
    sharing: mig
"""


def agent(*args, check=True):
    p = subprocess.run([AGENT, *args], capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise AssertionError(f"gpupool-agent {' '.join(args)}: {p.returncode}\n{p.stderr}")
    return p


def test_inventory_prints_the_registration_json(d, nodes):
    first = json.loads(agent("inventory", "--backend", "sim", "--node-file", nodes, "--node", "h100-1").stdout)
    again = json.loads(agent("inventory", "--backend", "sim", "--node-file", nodes, "--node", "h100-1").stdout)
    assert first == again
    node = first["node"]
    assert (node["name"], node["gpu_type"], node["gpu_count"], node["block"]) == ("h100-1", "H100", 8, "blk-a"), node
    assert first["backend"] == "sim"
    uuids = [g["uuid"] for g in first["gpus"]]
    assert node["gpu_uuids"] == uuids and len(set(uuids)) == 8 and all(u.startswith("GPU-") for u in uuids)
    other = json.loads(agent("inventory", "--backend", "sim", "--node-file", nodes, "--node", "h100-0").stdout)
    assert not set(uuids) & {g["uuid"] for g in other["gpus"]}
    mig = json.loads(agent("inventory", "--backend", "sim", "--node-file", nodes, "--node", "a100-mig").stdout)
    assert [g["sharing"] for g in mig["gpus"]] == ["mig"] * 4 and mig["gpus"][0]["mig"] == []


def test_fault_reaches_telemetry_and_a_bad_fault_is_refused(d, nodes):
    faults = nodes + ".faults"
    agent("fault", "--node-file", nodes, "--node", "a100-mig", "--gpu", "3", "--lost")
    agent("fault", "--node-file", nodes, "--node", "a100-mig", "--gpu", "1", "--ecc-uncorrected", "2")
    agent("fault", "--node-file", nodes, "--node", "h100-0", "--gpu", "1", "--xid", "79")
    with open(faults) as f:
        lines = [json.loads(line) for line in f]
    assert lines[0] == {"node": "a100-mig", "gpu": 3, "lost": True}, lines
    t = json.loads(agent("telemetry", "--backend", "sim", "--node-file", nodes, "--node", "a100-mig",
                         "--seed", "3", "--at-ms", "5000").stdout)
    assert t["at_ms"] == 5000
    assert [g["lost"] for g in t["gpus"]] == [False, False, False, True], t
    assert t["gpus"][3]["sm_active_pct"] is None
    assert t["gpus"][1]["ecc"] == {"corrected": 0, "uncorrected": 2}
    again = json.loads(agent("telemetry", "--backend", "sim", "--node-file", nodes, "--node", "a100-mig",
                             "--seed", "3", "--at-ms", "5000").stdout)
    assert again == t
    p = agent("fault", "--node-file", nodes, "--node", "a100-mig", "--gpu", "4", "--xid", "79", check=False)
    assert p.returncode == 1 and "(field gpu)" in p.stderr, (p.returncode, p.stderr)
    p = agent("fault", "--node-file", nodes, "--gpu", "0", "--xid", "79", check=False)
    assert p.returncode == 1 and "(field node)" in p.stderr, p.stderr
    with open(faults) as f:
        assert len(f.readlines()) == 3  # nothing written by the refused ones


def test_help_version_and_bad_command_lines(d, nodes):
    assert "inventory" in agent("--help").stdout
    assert agent("--version").stdout.startswith("gpupool-agent ")
    assert agent("inventory", "--node-file", nodes, check=False).returncode == 2  # no --backend
    p = agent("inventory", "--backend", "cuda", "--node-file", nodes, check=False)
    assert p.returncode == 1 and "(field backend)" in p.stderr, p.stderr
    assert agent("fault", "--node-file", nodes, "--gpu", "0", check=False).returncode == 2  # no fault
    assert agent("launch", check=False).returncode == 2
    with open(nodes, "a") as f:
        f.write("  - {name: bad, gpu_type: H100, gpus: \"8\"}\n")
    p = agent("inventory", "--backend", "sim", "--node-file", nodes, "--node", "h100-0", check=False)
    assert p.returncode == 1 and "(field nodes[2].gpus)" in p.stderr and "nodes.yaml:13: nodes[2]:" in p.stderr, p.stderr


def test_bad_node_runtime_values_are_refused(d, nodes):
    token = os.path.join(d, "join")
    with open(token, "w") as f:
        f.write("x\n")
    os.chmod(token, 0o600)
    base = ["run", "--server", "http://127.0.0.1:1", "--join-token-file", token, "--backend", "sim", "--node-file",
            nodes, "--state-dir", os.path.join(d, "state")]
    for bad in (["--log-max-mib", "0"], ["--default-pids-max", "-1"], ["--min-job-uid", "x"],
                ["--keep-scratch-s", "-5"], ["--job-uid-base", "4294000000", "--job-uid-span", "100000000"],
                ["--seccomp-profile", os.path.join(d, "missing.json")], ["--seccomp-profile", nodes]):
        p = agent(*(base + bad), check=False)
        assert p.returncode == 2 and bad[0] in p.stderr, (bad, p.returncode, p.stderr)  # refused for its own value
    with open(os.path.join(d, "no-rules.json"), "w") as f:
        f.write("{}")  # JSON, but no defaultAction nor syscalls
    p = agent(*(base + ["--seccomp-profile", os.path.join(d, "no-rules.json")]), check=False)
    assert p.returncode == 2 and "--seccomp-profile" in p.stderr, (p.returncode, p.stderr)


def main():
    failed = 0
    for test in (test_inventory_prints_the_registration_json,
                 test_fault_reaches_telemetry_and_a_bad_fault_is_refused,
                 test_help_version_and_bad_command_lines,
                 test_bad_node_runtime_values_are_refused):
        with tempfile.TemporaryDirectory() as d:
            nodes = os.path.join(d, "nodes.yaml")
            with open(nodes, "w") as f:
                f.write(NODES)
            try:
                test(d, nodes)
                print(f"ok   {test.__name__}")
            except AssertionError as e:
                failed += 1
                print(f"FAIL {test.__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
