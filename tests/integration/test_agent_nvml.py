#!/usr/bin/env python3
"""`gpupool-agent` with the nvml backend, against the stub NVML library
(tests/agent/nvml_stub.c, built as nvml-stub/libnvidia-ml.so.1; GP_NVML_STUB
names it) and a real gpupoold.

Behaviours under test:
  - without a driver, `inventory`, `telemetry` and `run --backend nvml`
    each say so in one line and exit 1;
  - `run --backend nvml` registers this host as one node with the stub's
    GPU UUIDs, the model mapped to the fleet's type (H100), its zone and
    block; a job runs there with CUDA_VISIBLE_DEVICES = its GPU's UUID, and
    the process NVML lists for it (the stub's processes file, written by
    the job with its own pid) reaches the heartbeat with its memory and SM;
  - a GPU the stub makes lost is reported unhealthy to gpupoold.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import agentproc  # noqa: E402
import gpd  # noqa: E402

AGENT = os.path.join(gpd.BIN, "gpupool-agent")
STUB = os.environ.get("GP_NVML_STUB") or os.path.join(os.path.dirname(gpd.BIN), "nvml-stub", "libnvidia-ml.so.1")
UUIDS = ["GPU-1111aaaa-0000-4000-8000-000000000000", "GPU-2222bbbb-0000-4000-8000-000000000001"]

# The job: prints its GPU, then tells the stub NVML it holds 1234 MiB at 55 % SM on it, and waits.
JOB = """
import os, sys, time
uuid = os.environ['CUDA_VISIBLE_DEVICES']
print('GPU ' + uuid, flush=True)
with open(os.path.join(os.environ['STUB_DIR'], 'processes'), 'a') as f:
    f.write('%d %d 1234 55\\n' % (int(sys.argv[1].split(',').index(uuid)), os.getpid()))
while True:
    time.sleep(0.1)
"""


class NvmlAgent(agentproc.Agent):
    """`gpupool-agent run --backend nvml` on the stub."""

    def __init__(self, d, stub_dir, node="nvml-1"):
        super().__init__(d, None, name="nvml-agent")
        self.stub_dir, self.node = stub_dir, node

    def command(self):
        return [AGENT, "run", "--server", self.d.url, "--join-token-file", self.token_file, "--backend", "nvml",
                "--nvml-library", STUB, "--node", self.node, "--zone", "z1", "--block", "blk-n",
                "--state-dir", self.state_dir, "--on-exit", "stop", "--no-cgroups", "--heartbeat-s", "1"]

    def start(self):
        os.environ["GPUPOOL_NVML_STUB"] = self.stub_dir  # the agent inherits it
        return super().start()


def stub_dir(d):
    path = os.path.join(d.dir, "stub")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "gpus.json"), "w") as f:
        json.dump([{"uuid": u, "name": "NVIDIA H100 80GB HBM3"} for u in UUIDS], f)
    open(os.path.join(path, "processes"), "w").close()
    os.chmod(os.path.join(path, "processes"), 0o666)  # a root agent runs the job as nobody
    return path


def one_line_error(*args):
    p = subprocess.run([AGENT, *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1, (args, p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "no NVIDIA driver: " in lines[0] and "cannot open shared object file" in lines[0], lines
    assert p.stdout == "", p.stdout


def test_without_a_driver_each_command_says_so_in_one_line(d):
    missing = os.path.join(d.dir, "none", "libnvidia-ml.so.1")
    one_line_error("inventory", "--backend", "nvml", "--nvml-library", missing)
    one_line_error("telemetry", "--backend", "nvml", "--nvml-library", missing)
    one_line_error("run", "--server", d.url, "--join-token", "x", "--backend", "nvml", "--nvml-library", missing,
                   "--state-dir", os.path.join(d.dir, "state"))


def test_the_stub_gpus_register_and_a_job_runs_on_its_uuid(d):
    stub = stub_dir(d)
    d.ok("PUT", "/v1/tenants/t", {})
    a = NvmlAgent(d, stub).start()
    try:
        a.wait_up(["nvml-1"])
        node = d.ok("GET", "/v1/nodes/nvml-1")
        assert [g["uuid"] for g in node["gpus"]] == UUIDS, node
        assert (node["gpu_type"], node["zone"], node["block"]) == ("H100", "z1", "blk-n"), node
        j = d.ok("POST", "/v1/jobs", {"tenant": "t", "gpus": 1, "gpu_types": ["H100"],
                                      "command": ["python3", "-c", JOB, ",".join(UUIDS)],
                                      "env": {"STUB_DIR": stub}})["id"]

        def output():
            logs = a.replica_logs(j)
            text = open(logs[-1], errors="replace").read() if logs else ""
            return [line[4:] for line in text.splitlines() if line.startswith("GPU ")]
        [uuid] = gpd.wait_for(output, what="the job's GPU")
        assert uuid in UUIDS and job_gpus(d, j) == [uuid], (uuid, job_gpus(d, j))

        def use():
            running = (d.ok("GET", "/v1/nodes/nvml-1")["agent"] or {}).get("running") or []
            return [g for e in running if e["job"] == j for g in e.get("gpus") or []]
        [seen] = gpd.wait_for(use, what="the job's process in a heartbeat")
        assert (seen["uuid"], seen["memory_used_mib"], seen["sm_active_pct"]) == (uuid, 1234, 55), seen
    finally:
        a.stop()


def job_gpus(d, job_id):
    placement = d.ok("GET", "/v1/jobs/%d" % job_id).get("placement") or [{}]
    return placement[0].get("gpus")


def test_a_lost_gpu_is_reported_unhealthy(d):
    stub = stub_dir(d)
    a = NvmlAgent(d, stub).start()
    try:
        a.wait_up(["nvml-1"])
        with open(os.path.join(stub, "health"), "w") as f:
            f.write("1 lost 1\n")
        gpd.wait_for(lambda: not d.ok("GET", "/v1/nodes/nvml-1")["gpus"][1]["healthy"], what="GPU 1 unhealthy")
        assert d.ok("GET", "/v1/nodes/nvml-1")["gpus"][0]["healthy"]
        assert "gpu=1 unhealthy: " in a.read_log(), a.read_log()
    finally:
        a.stop()


if __name__ == "__main__":
    gpd.run([test_without_a_driver_each_command_says_so_in_one_line,
             test_the_stub_gpus_register_and_a_job_runs_on_its_uuid,
             test_a_lost_gpu_is_reported_unhealthy], fleet=None)
