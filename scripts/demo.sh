#!/usr/bin/env bash
# demo.sh - gpupoold, the gpupool CLI and a multi-team story (`make demo`).
#
# Starts gpupoold on a fresh SQLite store under ./var/ with
# examples/fleet.yaml (32 H100 in blocks blk-a and blk-b, 8 A100, 8 L40S),
# applies examples/tenants.yaml through the CLI, and submits a mixed
# workload in which research/vision borrows research/nlp's idle H100 and
# is reclaimed when nlp submits.  Every step goes through `gpupool`.
#
# DEMO_ONCE=1: stop the daemon and exit when done.  Otherwise the daemon
# stays up for you to explore with gpupool (the commands are printed).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=./build/bin
VAR=./var
mkdir -p "$VAR"
rm -f "$VAR"/gpupool.db "$VAR"/gpupool.db-wal "$VAR"/gpupool.db-shm "$VAR"/admin.token "$VAR"/port
: > "$VAR"/gpupoold.log

"$BIN"/gpupoold --listen 127.0.0.1:0 --store "sqlite:$VAR/gpupool.db" --fleet examples/fleet.yaml \
    --port-file "$VAR"/port --tick-ms 500 2>>"$VAR"/gpupoold.log &
DAEMON=$!
stop_daemon() { kill "$DAEMON" 2>/dev/null || true; wait "$DAEMON" 2>/dev/null || true; }
trap stop_daemon EXIT

for _ in $(seq 100); do [[ -s "$VAR"/port ]] && break; sleep 0.1; done
[[ -s "$VAR"/port ]] || { echo "gpupoold did not start:"; cat "$VAR"/gpupoold.log; exit 1; }
export GPUPOOL_SERVER="http://127.0.0.1:$(cat "$VAR"/port)"
export GPUPOOL_TOKEN_FILE="$VAR/admin.token"
gp() { "$BIN"/gpupool "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
job_id() { sed -n 's/.*"id": \([0-9]*\),*/\1/p' | head -1; }
submit() { gp --json submit "$@" | job_id; }

say "gpupoold is up at $GPUPOOL_SERVER (store $VAR/gpupool.db, admin token in $VAR/admin.token)"
echo "NOTE: no node agents exist yet. gpupoold books GPUs for bound jobs, but nothing is executed."
gp nodes

say "Apply the tenant tree (examples/tenants.yaml): two orgs, four teams, product/ads untrusted"
gp apply -f examples/tenants.yaml
gp tenants

say "product/search starts a serving job on H100 and an embedding job on A100, inside its guarantee"
submit --tenant product/search --name serving --kind inference --gpus 8 --gpu-type H100 >/dev/null
submit --tenant product/search --name embed --gpus 8 --gpu-type A100 >/dev/null
say "product/ads (untrusted) trains on L40S"
submit --tenant product/ads --name ctr-model --gpus 4 --gpu-type L40S >/dev/null

say "research/vision submits four 8-GPU trainings (grace 5 s): one on its own floor, two borrow nlp's idle H100"
for i in 1 2 3 4; do
    submit --tenant research/vision --name "vit-$i" --gpus 8 --gpu-type H100 --grace 5 >/dev/null
done
gp jobs

say "research/nlp comes back: a 2 x 8 H100 gang inside its guarantee -> the engine reclaims"
NLP=$(submit --tenant research/nlp --name llm-pretrain --replicas 2 --gpus 8 --gpu-type H100 --grace 60 \
      -- python3 train.py)
gp job "$NLP" | sed -n '/^state/,/^reason/p'

say "The borrowers get PREEMPT with their grace; when it ends they are requeued and nlp binds"
for _ in $(seq 60); do
    gp --json job "$NLP" | grep -q '"state": "running"' && break
    sleep 0.5
done
gp jobs
for id in $(gp --json jobs --tenant research/vision | sed -n 's/.*"id": \([0-9]*\),*/\1/p'); do
    gp --json job "$id" | grep -q '"kind": "preempt"' || continue
    echo "job $id (research/vision) history:"
    gp job "$id" | sed -n '/^history:/,$p' | tail -n +2
done

say "Where nlp's gang landed"
gp job "$NLP" | grep -E '^(state|class|replica|execution)'

say "Usage per team so far (GPU-hours by class)"
sleep 1
gp usage

say "The audit log: every change above, hash-chained"
gp audit --limit 5
gp audit verify

if [[ "${DEMO_ONCE:-}" == "1" ]]; then
    say "DEMO_ONCE=1: stopping gpupoold"
    exit 0
fi
say "gpupoold keeps running.  In another shell:"
echo "  export GPUPOOL_SERVER=$GPUPOOL_SERVER GPUPOOL_TOKEN_FILE=$PWD/$VAR/admin.token"
echo "  ./build/bin/gpupool jobs | tenants | nodes | usage | job ID | submit --help"
echo "Ctrl-C stops it."
wait "$DAEMON"
