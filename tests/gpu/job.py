"""job.py - the work tests/gpu/run submits: one file, one mode per job.

Runs under gpupool-agent as a replica.  It appends one JSON object a line
to $GPUPOOL_CHECKPOINT_DIR/events.jsonl so the test reads what happened
from the job itself (times are time.time() on the node): "exec" first
thing, before PyTorch loads, "start" once the GPU is ready.  On the real GPU
it uses PyTorch; against the stub NVML library (GPUPOOL_NVML_STUB set in
its environment) it has no GPU, so it stands in for its GPU use by writing
its pid, memory and SM activity into the stub's `processes` file, as the
driver would show a CUDA process.

  job.py train     start (env, cgroup, device), resume from the checkpoint,
                   matmul until SIGTERM or a `release` file; on SIGTERM save
                   the checkpoint, write .done and exit 0
  job.py sleep S   hold the GPU for S seconds
  job.py mps S     report SMs and MPS limits, run matmuls for S seconds
  job.py hog N MIB N processes each hold MIB MiB of GPU memory (together
                   over the job's share), until killed
  job.py devices PATH...   try to open each path, report ok or the errno
  job.py nogpu     a job given no GPU: the NVIDIA device nodes it sees and
                   whether CUDA initialises
  job.py residue_write MIB   fill MIB MiB of GPU memory with 0x5A and exit
  job.py residue_read MIB    allocate MIB MiB without initialising it and
                   count the bytes a job before it could have left (0x5A)
"""
import errno
import glob
import json
import os
import signal
import sys
import time

CKPT = os.environ.get("GPUPOOL_CHECKPOINT_DIR", ".")
STUB = os.environ.get("GPUPOOL_NVML_STUB")


def event(kind, **fields):
    fields.update(ev=kind, t=time.time(), pid=os.getpid())
    with open(os.path.join(CKPT, "events.jsonl"), "a") as f:
        f.write(json.dumps(fields) + "\n")


def stub_use(mib, sm):
    """Against the stub: this process shows on GPU 0 with mib MiB and sm % (the stub re-reads the file)."""
    with open(os.path.join(STUB, "processes"), "a") as f:
        f.write("0 %d %d %d\n" % (os.getpid(), mib, sm))


class Gpu:
    """The work on the GPU: PyTorch matmuls, or the stub's stand-in."""

    def __init__(self, mib=1024):
        self.torch = None
        if STUB:
            stub_use(mib, 90)
            self.name, self.sms = "stub", 0
            return
        import torch
        self.torch = torch
        props = torch.cuda.get_device_properties(0)
        self.name, self.sms = props.name, props.multi_processor_count
        self.a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        self.b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def step(self, n=20):
        """n matmuls; returns TFLOP/s."""
        t0 = time.time()
        if self.torch is None:
            time.sleep(0.05)
            return 0.0
        for _ in range(n):
            self.a @ self.b
        self.torch.cuda.synchronize()
        return n * 2 * 8192 ** 3 / (time.time() - t0) / 1e12

    def save(self, path, step):
        if self.torch is None:
            with open(path, "w") as f:
                json.dump({"step": step}, f)
        else:
            self.torch.save({"step": step}, path)

    def load(self, path):
        if not os.path.exists(path):
            return 0
        if self.torch is None:
            with open(path) as f:
                return json.load(f)["step"]
        return int(self.torch.load(path)["step"])


def nvidia_nodes():
    return sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*"))


def pid1():
    """What PID 1 is: the job's own process in a container, the host's init otherwise."""
    try:
        with open("/proc/1/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode(errors="replace")
    except OSError as e:
        return "unreadable: %s" % e


def start_event(gpu):
    with open("/proc/self/cgroup") as f:
        cgroup = f.read().strip().splitlines()
    event("start", restart=int(os.environ.get("GPUPOOL_RESTART_COUNT", "-1")), nodes=nvidia_nodes(), pid1=pid1(),
          visible=os.environ.get("CUDA_VISIBLE_DEVICES", ""), cgroup=cgroup, device=gpu.name, sms=gpu.sms,
          threads=os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
          pinned=os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
          pipe=os.environ.get("CUDA_MPS_PIPE_DIRECTORY"))


def train():
    stop = []
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(time.time()))
    gpu = Gpu()
    start_event(gpu)
    path = os.path.join(CKPT, "model.pt")
    step = gpu.load(path)
    event("resumed", step=step)
    while not stop and not os.path.exists(os.path.join(CKPT, "release")):
        gpu.step()
        step += 1
    if stop:
        event("sigterm", at=stop[0], step=step)
        gpu.save(path, step)
        open(os.path.join(CKPT, ".done"), "w").close()
        event("checkpointed", step=step)
        time.sleep(60)  # the agent kills it once gpupoold has the checkpoint
    event("released", step=step)


def mps(seconds):
    gpu = Gpu()
    start_event(gpu)
    end, best = time.time() + seconds, 0.0
    while time.time() < end:
        best = max(best, gpu.step())
    event("done", tflops=round(best, 1))


def hog(n, mib):
    if n > 1:
        pids = [os.fork() for _ in range(n - 1)]
        if 0 in pids:
            n = 1  # a child: hold its part below
    if STUB:
        stub_use(mib, 10)
    else:
        import torch
        keep = torch.empty(mib * 2 ** 20, dtype=torch.uint8, device="cuda")
        keep.fill_(1)
        torch.cuda.synchronize()
    event("holding", mib=mib)
    time.sleep(600)


def devices(paths):
    result = {}
    for p in paths:
        try:
            os.close(os.open(p, os.O_RDWR))
            result[p] = "ok"
        except OSError as e:
            result[p] = errno.errorcode.get(e.errno, str(e.errno))
    event("devices", result=result, visible=os.environ.get("CUDA_VISIBLE_DEVICES", ""))


def nogpu():
    cuda = "stub: no CUDA here"
    if not STUB:
        try:
            import torch
            torch.cuda.init()
            cuda = "initialised: %d device(s)" % torch.cuda.device_count()
        except Exception as e:  # what CUDA says without a device
            cuda = "failed: %s" % str(e).splitlines()[0][:200]
    event("nogpu", nodes=nvidia_nodes(), visible=os.environ.get("CUDA_VISIBLE_DEVICES"), cuda=cuda, pid1=pid1())


def residue(write, mib):
    if STUB:
        event("written" if write else "read", stub=True, mib=mib)
        return
    import torch
    n = mib * 2 ** 20
    if write:
        x = torch.full((n,), 0x5A, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        event("written", mib=mib, pattern=int((x == 0x5A).sum().item()))
        return
    x = torch.empty((n,), dtype=torch.uint8, device="cuda")  # not initialised: whatever the memory held
    torch.cuda.synchronize()
    event("read", mib=mib, pattern=int((x == 0x5A).sum().item()), nonzero=int((x != 0).sum().item()))


def main(argv):
    event("exec")  # before PyTorch loads: gpupool's part of a start ends here
    mode = argv[1]
    if mode == "train":
        train()
    elif mode == "sleep":
        gpu = Gpu()
        start_event(gpu)
        time.sleep(float(argv[2]))
    elif mode == "mps":
        mps(float(argv[2]))
    elif mode == "hog":
        hog(int(argv[2]), int(argv[3]))
    elif mode == "devices":
        devices(argv[2:])
    elif mode == "nogpu":
        nogpu()
    elif mode in ("residue_write", "residue_read"):
        residue(mode == "residue_write", int(argv[2]))
    else:
        sys.exit("job.py: unknown mode " + mode)


if __name__ == "__main__":
    main(sys.argv)
