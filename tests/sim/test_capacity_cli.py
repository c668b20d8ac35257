#!/usr/bin/env python3
"""gpupool-sim --capacity from the command line (src/sim/capacity.h), on the
tiny world of tests/sim/test_capacity.c written as two ITP cluster files:
team a two 8-GPU jobs of 10,000 s at t=0 and a 1-GPU job of 1 s at 30,000;
team b two 8-GPU jobs of 10,000 s at t=15,000.  --size-fleet 100 promises
each team its peak, 16 GPUs.  Static needs 2 + 2 nodes, FIFO and gpupool
the joint peak, 2 nodes; utilization 33.3 % and 66.7 %.  The last stdout
line is the JSON summary; capacity.csv and the plot script go to --out.
Bad calls exit 2 with a message: no guarantees, a negative service level.
GP_BIN names the folder with the binaries (ctest sets it).
"""
import json
import os
import subprocess
import sys
import tempfile

SIM = os.path.join(os.environ.get("GP_BIN", "build/bin"), "gpupool-sim")


def write(path, rows):
    with open(path, "w") as f:
        f.write("job_id,submission_time,duration,num_gpu\n")
        for i, (t, d, g) in enumerate(rows):
            f.write(f"j{i},{t},{d},{g}\n")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        a, b, out = f"{tmp}/a.csv", f"{tmp}/b.csv", f"{tmp}/out"
        write(a, [(0, 10000, 8), (0, 10000, 8), (30000, 1, 1)])
        write(b, [(15000, 10000, 8), (15000, 10000, 8)])
        traces = ["--trace", f"itp:{a}", "--trace", f"itp:{b}"]
        p = subprocess.run([SIM, *traces, "--size-fleet", "100", "--capacity", "--policy", "static,fifo,gpupool",
                            "--quiet", "--no-plots", "--out", out], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", p.stderr
        rows = {r["policy"]: r for r in json.loads(p.stdout.strip().splitlines()[-1])["capacity"]}
        assert rows["static"]["nodes"] == 4 and rows["static"]["gpus"] == 32, rows
        assert rows["fifo"]["nodes"] == 2 and rows["gpupool"]["nodes"] == 2, rows
        assert abs(rows["static"]["utilization_pct"] - 100 / 3) < 1e-2, rows
        assert abs(rows["gpupool"]["utilization_pct"] - 200 / 3) < 1e-2, rows
        with open(f"{out}/capacity.csv") as f:
            lines = f.read().splitlines()
        assert lines[0].startswith("policy,nodes,gpus,utilization_pct"), lines
        assert lines[1].startswith("static,4,32,33.333"), lines
        assert os.path.exists(f"{out}/capacity.gp")

        p = subprocess.run([SIM, *traces, "--fleet", f"{out}/fleet.yaml", "--capacity"], capture_output=True,
                           text=True)
        assert p.returncode == 2 and "--capacity needs guarantees" in p.stderr, (p.returncode, p.stderr)
        p = subprocess.run([SIM, *traces, "--size-fleet", "90", "--capacity", "--slo-mean-wait", "-5"],
                           capture_output=True, text=True)
        assert p.returncode == 2 and "--slo-mean-wait" in p.stderr, (p.returncode, p.stderr)
    print("ok")


if __name__ == "__main__":
    sys.exit(main())
