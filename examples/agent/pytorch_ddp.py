#!/usr/bin/env python3
"""pytorch_ddp.py - a PyTorch DistributedDataParallel job under gpupool.

A worked example for docs/agent.md's checkpoint protocol (the demo runs
train.py instead, which needs no torch).  Submit it as a gang, one replica
per node, each replica starting one process per GPU with torchrun:

    gpupool submit --tenant research/nlp --replicas 2 --gpus 8 --gpu-type H100 \
        --topology block --grace 120 -- \
        sh -c 'exec torchrun --nnodes=$NNODES --node-rank=$NODE_RANK --nproc-per-node=8 \
                   --master-addr=$MASTER_ADDR --master-port=$MASTER_PORT /opt/jobs/pytorch_ddp.py'

torchrun reads nothing from gpupool itself: the agent sets NNODES,
NODE_RANK, MASTER_ADDR and MASTER_PORT (the same port on every replica),
and CUDA_VISIBLE_DEVICES to the replica's GPUs.  The job then:

  1. resumes from $GPUPOOL_CHECKPOINT_DIR/last.pt when it exists (after a
     preemption GPUPOOL_RESTART_COUNT > 0 and the same job id comes back);
  2. on SIGTERM (the grace started: preemption, cancel or time limit)
     finishes the step in hand, saves a checkpoint from global rank 0
     after a barrier (every rank reached the same step), and rank 0
     touches $GPUPOOL_CHECKPOINT_DIR/.done (or runs `gpupool checkpoint`):
     gpupoold ends the grace at once and the reclaiming job starts;
  3. exits 0.  A replica that ignores SIGTERM is killed, whole tree, when
     the grace ends; whatever it did since its last checkpoint is lost
     (gpupoold records the GPU-seconds lost).

$GPUPOOL_CHECKPOINT_DIR must be a filesystem every node sees (the agent's
--checkpoint-root), since the gang may come back on other nodes.
"""
import os
import signal

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

CKPT_DIR = os.environ["GPUPOOL_CHECKPOINT_DIR"]
CKPT = os.path.join(CKPT_DIR, "last.pt")
stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True


def save_checkpoint(model, optimizer, step):
    tmp = CKPT + ".tmp"
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, tmp)
    os.replace(tmp, CKPT)                          # atomic: a half-written file is never "last"
    open(os.path.join(CKPT_DIR, ".done.tmp"), "w").close()
    os.replace(os.path.join(CKPT_DIR, ".done.tmp"), os.path.join(CKPT_DIR, ".done"))


def main():
    signal.signal(signal.SIGTERM, on_sigterm)     # torchrun forwards SIGTERM to every worker
    dist.init_process_group("nccl")               # RANK, WORLD_SIZE, MASTER_* from torchrun
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(torch.nn.Linear(4096, 4096).cuda(), device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    step = 0
    if os.path.exists(CKPT):
        state = torch.load(CKPT, map_location="cuda:%d" % local_rank)
        model.module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = state["step"]
        if dist.get_rank() == 0:
            print("restart %s: resuming at step %d" % (os.environ.get("GPUPOOL_RESTART_COUNT"), step), flush=True)
    while step < 100_000:
        x = torch.randn(64, 4096, device="cuda")
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        # Every rank must agree to stop at the same step: reduce the flag.
        flag = torch.tensor([1 if stop_requested else 0], device="cuda")
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            break
    if dist.get_rank() == 0:
        save_checkpoint(model, optimizer, step)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
