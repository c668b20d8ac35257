#!/usr/bin/env python3
"""train.py - a gang replica that trains, checkpoints on SIGTERM and resumes.

What `make demo` runs for its 16-GPU gang (2 replicas x 8 H100) and for the
borrowed bursts; no GPU or framework is needed, the "training" is a loop.
It shows what a job sees (docs/agent.md, "What a job sees") and the
checkpoint protocol:

  - at start it prints its rank, the world, its peers, the rendezvous
    (MASTER_ADDR:MASTER_PORT) and its GPUs, from the agent's variables;
  - with GPUPOOL_RESTART_COUNT > 0 it resumes from the step its last
    checkpoint saved ($GPUPOOL_CHECKPOINT_DIR/rank<R>.json);
  - on SIGTERM (preemption: the grace starts) each rank saves its step;
    rank 0 waits (at most CKPT_WAIT_S) until every rank has saved, then
    touches $GPUPOOL_CHECKPOINT_DIR/.done: "checkpoint done".  The agent
    reports it, gpupoold ends the grace at once and the reclaimer binds.

Example: replica 1 of job 7, preempted at step 40, requeued and bound
again, prints "rank 1/2 ... restart 1" and "resuming at step 40".

    train.py [STEPS] [STEP_S]      defaults 600 steps of 0.5 s; exits 0 when done
"""
import json
import os
import signal
import sys
import time

CKPT_WAIT_S = 10


def env(name, default=""):
    return os.environ.get(name, default)


def save(path, step):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step, "restart": int(env("GPUPOOL_RESTART_COUNT", "0"))}, f)
    os.rename(tmp, path)


def touch_done(ckdir):
    tmp = os.path.join(ckdir, ".done.tmp")
    open(tmp, "w").close()
    os.rename(tmp, os.path.join(ckdir, ".done"))


def wait_for_ranks(ckdir, world, restart):
    deadline = time.time() + CKPT_WAIT_S
    while time.time() < deadline:
        saved = 0
        for r in range(world):
            try:
                with open(os.path.join(ckdir, "rank%d.json" % r)) as f:
                    saved += json.load(f)["restart"] == restart
            except (OSError, ValueError, KeyError):
                pass
        if saved == world:
            return True
        time.sleep(0.05)
    return False


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    step_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    rank, world = int(env("GPUPOOL_REPLICA", "0")), int(env("GPUPOOL_REPLICAS", "1"))
    restart = int(env("GPUPOOL_RESTART_COUNT", "0"))
    peers = env("GPUPOOL_PEERS").split(",")
    ckdir = env("GPUPOOL_CHECKPOINT_DIR", ".")
    os.makedirs(ckdir, exist_ok=True)
    mine = os.path.join(ckdir, "rank%d.json" % rank)
    gpus = env("CUDA_VISIBLE_DEVICES").split(",")
    print("job %s rank %d/%d on %s: peers %s, master %s:%s, %d GPUs (%s..), restart %d"
          % (env("GPUPOOL_JOB_ID"), rank, world, peers[rank] if rank < len(peers) else "?", ",".join(peers),
             env("MASTER_ADDR"), env("MASTER_PORT"), len(gpus), gpus[0][:12], restart), flush=True)
    step = 0
    if restart > 0 and os.path.exists(mine):
        with open(mine) as f:
            step = json.load(f)["step"]
        print("rank %d resuming at step %d" % (rank, step), flush=True)

    stopping = []
    signal.signal(signal.SIGTERM, lambda sig, frame: stopping.append(time.time()))
    while step < steps and not stopping:
        time.sleep(step_s)
        step += 1
        if step % 20 == 0:
            print("rank %d step %d loss %.3f" % (rank, step, 2.0 / (1 + step / 100)), flush=True)
    if not stopping:
        print("rank %d done after %d steps" % (rank, step), flush=True)
        return 0
    save(mine, step)
    print("rank %d: SIGTERM, saved step %d" % (rank, step), flush=True)
    if rank == 0:
        if wait_for_ranks(ckdir, world, restart):
            touch_done(ckdir)
            print("rank 0: every rank saved; checkpoint done (%s/.done)" % ckdir, flush=True)
        else:
            print("rank 0: not every rank saved within %d s; no checkpoint" % CKPT_WAIT_S, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
