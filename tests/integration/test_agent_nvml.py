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
  - a GPU the stub makes lost is reported unhealthy to gpupoold;
  - XIDs from the stub's event set are judged by the XID table: one the
    catalog says only restarts the application leaves the GPU in service
    (and in its XID history); one that needs a GPU reset takes it out and,
    with --drain-on-gpu-failure, drains the node; the repair command mends
    the stub's GPU, re-validation through NVML passes, the GPU returns and
    the node is undrained;
  - on a GPU in MIG mode a MIG job's instance is created through NVML, the
    job sees only its instance's UUID, and the instance is destroyed after.
"""
import glob
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

    def __init__(self, d, stub_dir, node="nvml-1", extra=()):
        super().__init__(d, None, name="nvml-agent", extra=extra)
        self.stub_dir, self.node = stub_dir, node

    def command(self):
        return [AGENT, "run", "--server", self.d.url, "--join-token-file", self.token_file, "--backend", "nvml",
                "--nvml-library", STUB, "--node", self.node, "--zone", "z1", "--block", "blk-n",
                "--state-dir", self.state_dir, "--on-exit", "stop", "--no-cgroups", "--heartbeat-s", "1"] + self.extra

    def start(self):
        os.environ["GPUPOOL_NVML_STUB"] = self.stub_dir  # the agent inherits it
        return super().start()


def stub_dir(d, **gpu):
    path = os.path.join(d.dir, "stub")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "gpus.json"), "w") as f:
        json.dump([dict({"uuid": u, "name": "NVIDIA H100 80GB HBM3"}, **gpu) for u in UUIDS], f)
    open(os.path.join(path, "processes"), "w").close()
    os.chmod(os.path.join(path, "processes"), 0o666)  # a root agent runs the job as nobody
    return path


def one_line_error(*args):
    env = dict(os.environ, GPUPOOL_JOIN_TOKEN="x")
    p = subprocess.run([AGENT, *args], capture_output=True, text=True, timeout=30, env=env)
    assert p.returncode == 1, (args, p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "no NVIDIA driver: " in lines[0] and "cannot open shared object file" in lines[0], lines
    assert p.stdout == "", p.stdout


def test_without_a_driver_each_command_says_so_in_one_line(d):
    missing = os.path.join(d.dir, "none", "libnvidia-ml.so.1")
    one_line_error("inventory", "--backend", "nvml", "--nvml-library", missing)
    one_line_error("telemetry", "--backend", "nvml", "--nvml-library", missing)
    one_line_error("run", "--server", d.url, "--backend", "nvml", "--nvml-library", missing,
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


def append(path, text):
    with open(path, "a") as f:
        f.write(text)


def health_audit(d, node):
    rows = d.ok("GET", "/v1/audit?limit=1000")["audit"]
    return [r["action"] for r in rows if r["target"].startswith("node/" + node) and not r["action"].startswith("agent.")]


def test_stub_xids_are_judged_by_the_catalog_and_a_reset_one_drains_repairs_and_returns(d):
    d.extra = d.extra + ["--drain-on-gpu-failure"]
    d.stop()
    d.start()
    stub = stub_dir(d)
    health = os.path.join(stub, "health")
    # The repair: what a GPU reset does to the stub's GPU (its volatile ECC count cleared), noted.
    repair = "echo \"$GPUPOOL_GPU_INDEX ecc_volatile_uncorrected 0\" >> %s && echo reset" % health
    a = NvmlAgent(d, stub, extra=["--health-every", "1", "--repair-command", repair]).start()
    try:
        a.wait_up(["nvml-1"])
        append(os.path.join(stub, "events"), "0 13\n")  # Graphics Engine Exception: restart the application

        def xids(gpu):
            return [x["xid"] for x in d.ok("GET", "/v1/nodes/nvml-1")["gpus"][gpu]["health"]["xids"]]
        gpd.wait_for(lambda: xids(0) == [13], 20, "XID 13 in GPU 0's history")
        node = d.ok("GET", "/v1/nodes/nvml-1")
        assert node["gpus"][0]["healthy"] and not node["draining"], node
        append(os.path.join(stub, "events"), "1 48\n")  # Double Bit ECC Error: reset the GPU
        gpd.wait_for(lambda: health_audit(d, "nvml-1") == ["gpu.unhealthy", "node.drain", "gpu.healthy",
                                                           "node.undrain"], 40, "out, drained, repaired, returned")
        node = d.ok("GET", "/v1/nodes/nvml-1")
        assert node["gpus"][1]["healthy"] and not node["draining"], node
        assert xids(1) == [48], xids(1)
        checks = d.ok("GET", "/v1/nodes/nvml-1/checks?gpu=1&limit=100")["checks"]
        kinds = {(c["check"], c["passed"]) for c in checks}
        assert ("xid", False) in kinds and ("repair", True) in kinds and ("nvml", True) in kinds, checks
    finally:
        a.stop()


def test_a_mig_job_gets_an_instance_made_through_nvml(d):
    stub = stub_dir(d, mig_mode=1)
    d.ok("PUT", "/v1/tenants/t", {})
    a = NvmlAgent(d, stub).start()
    try:
        a.wait_up(["nvml-1"])
        assert [g["sharing"] for g in d.ok("GET", "/v1/nodes/nvml-1")["gpus"]] == ["mig", "mig"]
        j = d.ok("POST", "/v1/jobs", {"tenant": "t", "share": {"mig": "3g.40gb"}, "gpu_types": ["H100"],
                                      "command": ["sh", "-c", "echo GPU $CUDA_VISIBLE_DEVICES; "
                                                  "while [ ! -e release ]; do sleep 0.1; done"]})["id"]

        def visible():
            logs = a.replica_logs(j)
            text = open(logs[-1], errors="replace").read() if logs else ""
            return [line[4:] for line in text.splitlines() if line.startswith("GPU ")]
        [uuid] = gpd.wait_for(visible, 20, "the job's GPU")
        assert uuid.startswith("MIG-"), uuid
        with open(os.path.join(stub, "mig.json")) as f:
            made = json.load(f)
        assert uuid in json.dumps(made), made
        inventory = json.loads(subprocess.run([AGENT, "inventory", "--backend", "nvml", "--nvml-library", STUB],
                                              capture_output=True, text=True, timeout=30,
                                              env=dict(os.environ, GPUPOOL_NVML_STUB=stub)).stdout)
        instances = [m for g in inventory["gpus"] for m in g.get("mig") or []]
        assert [(m["uuid"], m["profile"]) for m in instances] == [(uuid, "3g.40gb")], instances
        (work,) = glob.glob(os.path.join(a.state_dir, "nvml-1", "work", "job%d-r0-*" % j))  # one per run
        open(os.path.join(work, "release"), "w").close()
        gpd.wait_for(lambda: d.ok("GET", "/v1/jobs/%d" % j)["state"] == "succeeded", 20, "the job done")

        def instances_left():
            inv = json.loads(subprocess.run([AGENT, "inventory", "--backend", "nvml", "--nvml-library", STUB],
                                            capture_output=True, text=True, timeout=30,
                                            env=dict(os.environ, GPUPOOL_NVML_STUB=stub)).stdout)
            return [m for g in inv["gpus"] for m in g.get("mig") or []]
        gpd.wait_for(lambda: instances_left() == [], 20, "the instance destroyed")
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
             test_a_lost_gpu_is_reported_unhealthy,
             test_stub_xids_are_judged_by_the_catalog_and_a_reset_one_drains_repairs_and_returns,
             test_a_mig_job_gets_an_instance_made_through_nvml], fleet=None)
