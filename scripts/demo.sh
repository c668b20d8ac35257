#!/usr/bin/env bash
# demo.sh - the whole system (`make demo`): gpupoold, node agents that run
# real processes, and a multi-team story told through the gpupool CLI.
#
# Starts gpupoold on a fresh SQLite store under ./var/, makes a join token,
# and starts one gpupool-agent (sim backend) that joins six simulated nodes
# from examples/agent/nodes.yaml: 2+2 x 8 H100 in fabric blocks blk-a and
# blk-b, 8 A100 in MIG mode, 4 L40S time-sliced.  Then, through `gpupool`:
#   1. examples/tenants.yaml (two orgs, four teams) once the nodes are up;
#   2. product/search: an 8-H100 service and two MIG inference services
#      (3g.40gb each: two instances of one A100); two notebooks side by
#      side on a time-sliced L40S;
#   3. research/vision bursts three 8-GPU trainings: one on its floor, two
#      borrowing research/nlp's idle H100;
#   4. research/nlp submits a 2 x 8 H100 gang (any two nodes: vision's floor
#      job may sit in either block): the borrowers get SIGTERM,
#      checkpoint (examples/agent/train.py touches $GPUPOOL_CHECKPOINT_DIR/.done),
#      gpupoold ends their 60 s grace early and the gang starts, its
#      replicas printing their rank and peers;
#   5. an injected XID 48 (double-bit ECC; NVIDIA's catalog: reset the
#      GPU) on the GPU of a MIG service marks that GPU unhealthy; what ran
#      on it is requeued and comes back on another GPU.  (An XID 79, fallen
#      off the bus, would drain the whole node: the catalog says reboot it.)
# The processes are real (examples/agent/*.py, *.sh); their logs are under
# var/agent/NODE/logs/.  The admin token names no user, so each job runs as
# a uid of its own when the agent is root (as the agent's user otherwise);
# their scripts, working folders and checkpoints go to a gpupool-demo.*
# folder those uids can reach (this checkout may sit under /root, 0700),
# removed when the demo ends: /var/lib/gpupool-demo.* as root (outside the
# private /tmp each replica gets: docs/agent.md "What a job sees"), else
# /tmp/gpupool-demo.*.
#
# DEMO_ONCE=1: stop everything and exit when done.  Otherwise gpupoold and
# the agent stay up for you to explore with gpupool (the commands are
# printed), and the demo points your gpupool CLI's config at them
# (scripts/demo-config.sh: server and token_file in ~/.config/gpupool/config,
# a config you had kept as config.before-demo and put back when the demo
# stops), so a new shell's `gpupool jobs` works; DEMO_CONFIG=0 leaves your
# config alone.  DEMO_CGROUPS=0 runs the replicas without cgroups (the agent
# puts each in its own cgroup when it runs as root).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=./build/bin
VAR=./var
NODES=examples/agent/nodes.yaml
mkdir -p "$VAR"
rm -rf "$VAR"/gpupool.db "$VAR"/gpupool.db-wal "$VAR"/gpupool.db-shm "$VAR"/gpupool.db.logs "$VAR"/admin.token \
       "$VAR"/port "$VAR"/join.token "$VAR"/agent "$VAR"/faults
: > "$VAR"/gpupoold.log
: > "$VAR"/agent.log
# A root agent runs jobs that name no user as their own uids, which may not reach this checkout
# (/root is 0700): the job scripts, working folders and checkpoints go to a folder anyone can read.
# As root it is not under /tmp: the replicas get a private /tmp, which would hide it from them.
RUN_PARENT=/tmp
[[ "$(id -u)" == 0 && -w /var/lib ]] && RUN_PARENT=/var/lib
RUN=$(mktemp -d "$RUN_PARENT"/gpupool-demo.XXXXXX)
chmod 755 "$RUN"
mkdir -p "$RUN"/jobs
cp examples/agent/*.py examples/agent/*.sh "$RUN"/jobs/
JOBS=$RUN/jobs

DAEMON='' AGENT='' REGISTRY='' CONFIG_WRITTEN=''
# Stops what the demo started: the jobs first (cancelled, so gpupoold assigns nothing new), then
# the agent (--on-exit stop kills what still runs), then gpupoold; then any replica left over.
stop_all() {
    set +e
    # (Ctrl-C reaches gpupoold too: then there is nothing to cancel.)
    live_ids() { "$BIN"/gpupool --json jobs --state live 2>/dev/null | json '[x["id"] for x in j["jobs"]]' 2>/dev/null; }
    if [[ -n "$DAEMON" ]] && kill -0 "$DAEMON" 2>/dev/null && [[ -n "${GPUPOOL_SERVER:-}" ]]; then
        for id in $(live_ids); do "$BIN"/gpupool cancel "$id" >/dev/null 2>&1; done
        for _ in $(seq 100); do [[ -z "$(live_ids)" ]] && break; sleep 0.2; done
    fi
    if [[ -n "$AGENT" ]]; then kill "$AGENT" 2>/dev/null; wait "$AGENT" 2>/dev/null; fi
    if [[ -n "$DAEMON" ]]; then kill "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null; fi
    if [[ -n "$REGISTRY" ]]; then kill "$REGISTRY" 2>/dev/null; wait "$REGISTRY" 2>/dev/null; fi
    local f pid
    for f in "$VAR"/agent/*/replicas/*/pid; do
        [[ -f "$f" ]] && pid=$(cat "$f") && [[ -n "$pid" ]] || continue
        grep -qs "$RUN" /proc/"$pid"/cmdline && kill -KILL -- -"$pid" 2>/dev/null
    done
    rm -rf "$RUN" 2>/dev/null || { sleep 1; rm -rf "$RUN"; }  # a replica's last files may still land
    if [[ -n "$CONFIG_WRITTEN" ]]; then ./scripts/demo-config.sh restore; fi
}
trap stop_all EXIT
# json EXPR [ARGS...]: evaluates EXPR (Python) on the JSON read from stdin (j), ARGS in a.
json() { python3 -c 'import json, sys; j = json.load(sys.stdin); a = sys.argv[2:]; r = eval(sys.argv[1]); print("\n".join(map(str, r)) if isinstance(r, list) else r)' "$@"; }

"$BIN"/gpupoold --listen 127.0.0.1:0 --store "sqlite:$VAR/gpupool.db" --port-file "$VAR"/port \
    --tick-ms 200 --pass-min-ms 0 --node-lost-after 20 2>>"$VAR"/gpupoold.log &
DAEMON=$!
for _ in $(seq 100); do [[ -s "$VAR"/port ]] && break; sleep 0.1; done
[[ -s "$VAR"/port ]] || { echo "gpupoold did not start:"; cat "$VAR"/gpupoold.log; exit 1; }
export GPUPOOL_SERVER="http://127.0.0.1:$(cat "$VAR"/port)"
export GPUPOOL_TOKEN_FILE="$VAR/admin.token"

gp() { "$BIN"/gpupool "$@"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
fail() { echo "demo: $*" >&2; echo "--- gpupoold.log"; tail -20 "$VAR"/gpupoold.log; echo "--- agent.log"; tail -20 "$VAR"/agent.log; exit 1; }
submit() { gp --json submit "$@" | json 'j["jobs"][0]["id"] if "jobs" in j else j["id"]'; }
state() { gp --json job "$1" | json 'j["state"]'; }
# until SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s.
until_true() {
    local limit=$1 what=$2; shift 2
    for _ in $(seq $((limit * 5))); do "$@" && return 0; sleep 0.2; done
    fail "timed out after ${limit}s waiting for $what"
}
is_state() { [[ "$(state "$1")" == "$2" ]]; }
nodes_up() { [[ "$(gp --json nodes | json 'sum(1 for n in j["nodes"] if n["up"])')" == "$1" ]]; }
# The log of a job's replica as the agent wrote it (latest run first found).
replica_log() { { ls -t "$VAR"/agent/*/logs/job"$1"-r"$2"-*.log 2>/dev/null || true; } | head -1; }
has_log_line() { local f; f=$(replica_log "$1" "$2"); [[ -n "$f" ]] && grep -q "$3" "$f"; }
# show_log JOB REPLICA PATTERN: the lines matching PATTERN (the last 4) of what the replica
# wrote, through gpupoold (gpupool logs), or from the agent's file while gpupoold has none yet.
show_log() {
    local out f
    out=$(gp logs "$1" --replica "$2" 2>/dev/null || true)
    if [[ -z "$out" ]]; then f=$(replica_log "$1" "$2"); [[ -n "$f" ]] && out=$(cat "$f"); fi
    printf '%s\n' "$out" | { grep -E "$3" || true; } | tail -n 4 | sed 's/^/    /'
}
history_of() { gp job "$1" | sed -n '/^history:/,$p' | tail -n +2; }

say "gpupoold is up at $GPUPOOL_SERVER (store $VAR/gpupool.db, admin token in $VAR/admin.token)"
gp --json token create --name demo-rack --role join --nodes 'h100-*,a100-mig-*,l40s-ts-*' --ttl 1h | json 'j["token"]' > "$VAR"/join.token
chmod 600 "$VAR"/join.token
echo "join token (1 hour) in $VAR/join.token"

say "One gpupool-agent joins the six sim nodes of $NODES"
CGROUPS=()
if [[ "$(id -u)" != 0 || "${DEMO_CGROUPS:-1}" == 0 ]]; then
    CGROUPS=(--no-cgroups)
elif [[ -f /sys/fs/cgroup/cgroup.controllers && "$(cat /proc/self/cgroup)" == "0::/" ]]; then
    # cgroup v2 and we sit in its root: a container's own cgroup, where v2 lets no group both
    # hold processes and hand controllers down (docs/agent.md).  Run without cgroups here.
    echo "(cgroup v2 seen from its root, as in a container: the replicas run without cgroups)"
    CGROUPS=(--no-cgroups)
fi
# Containers from images (docs/agent.md "Containers"): as root, with runc and the image tools, the
# demo builds a small image (busybox-static) and pushes it to a registry of its own on loopback
# (Debian's docker-registry), so an untrusted tenant's job below is pulled and run in a container.
IMAGE=''
if [[ "$(id -u)" == 0 && ${#CGROUPS[@]} == 0 ]] && command -v runc skopeo umoci docker-registry busybox >/dev/null; then
    REG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$RUN"/registry "$RUN"/image-root/bin
    printf 'version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: 127.0.0.1:%s\n' \
        "$RUN"/registry/data "$REG_PORT" > "$RUN"/registry/config.yml
    docker-registry serve "$RUN"/registry/config.yml >/dev/null 2>"$RUN"/registry/log &
    REGISTRY=$!
    cp "$(command -v busybox)" "$RUN"/image-root/bin/busybox
    for applet in sh ls cat grep nc head printf unshare echo true; do ln -s busybox "$RUN"/image-root/bin/$applet; done
    umoci init --layout "$RUN"/layout >/dev/null
    umoci new --image "$RUN"/layout:1 >/dev/null
    umoci insert --image "$RUN"/layout:1 "$RUN"/image-root / >/dev/null
    registry_up() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$1" 2>/dev/null; }
    until_true 10 "the demo's registry" registry_up "http://127.0.0.1:$REG_PORT/v2/"
    skopeo copy --dest-tls-verify=false oci:"$RUN"/layout:1 docker://127.0.0.1:"$REG_PORT"/demo/busybox:1 >/dev/null
    IMAGE=docker://127.0.0.1:$REG_PORT/demo/busybox:1
    CGROUPS+=(--insecure-registry 127.0.0.1:"$REG_PORT")
    echo "a registry at 127.0.0.1:$REG_PORT holds $IMAGE (busybox-static, built just now)"
fi
"$BIN"/gpupool-agent run --server "$GPUPOOL_SERVER" --join-token-file "$VAR"/join.token \
    --backend sim --node-file "$NODES" --state-dir "$VAR"/agent --work-root "$RUN"/work \
    --checkpoint-root "$RUN"/checkpoints --fault-file "$VAR"/faults --on-exit stop "${CGROUPS[@]}" \
    2>>"$VAR"/agent.log &
AGENT=$!
until_true 30 "six nodes up" nodes_up 6
gp nodes

say "Apply the tenant tree (examples/tenants.yaml): two orgs, four teams, product/ads untrusted"
gp apply -f examples/tenants.yaml
gp tenants

say "product/search: a service on 8 H100 and two inference services on MIG instances of the A100 node"
SERVING=$(submit --tenant product/search --name serving --kind inference --gpus 8 --gpu-type H100 \
          --grace 5 -- python3 "$JOBS"/serve.py)
RANKER1=$(submit --tenant product/search --name ranker-1 --kind inference --gpu-type A100 --mig 3g.40gb \
          --grace 5 -- python3 "$JOBS"/serve.py)
RANKER2=$(submit --tenant product/search --name ranker-2 --kind inference --gpu-type A100 --mig 3g.40gb \
          --grace 5 -- python3 "$JOBS"/serve.py)
say "Two notebooks on the time-sliced L40S node (1 CPU, 512 MiB each)"
NOTEBOOK=$(submit --tenant research/vision --name notebook-ana --kind interactive --gpu-type L40S --timeslice \
           --cpu-millis 1000 --mem-mib 512 --time-limit 3600 -- sh "$JOBS"/notebook.sh)
NOTEBOOK2=$(submit --tenant research/nlp --name notebook-bo --kind interactive --gpu-type L40S --timeslice \
            --cpu-millis 1000 --mem-mib 512 -- sh "$JOBS"/notebook.sh)
for id in "$SERVING" "$RANKER1" "$RANKER2" "$NOTEBOOK" "$NOTEBOOK2"; do
    until_true 20 "job $id running" is_state "$id" running
done
until_true 20 "the notebook's first line" has_log_line "$NOTEBOOK" 0 notebook
until_true 20 "the second notebook's first line" has_log_line "$NOTEBOOK2" 0 notebook
for id in "$RANKER1" "$RANKER2"; do echo "job $id says:"; show_log "$id" 0 "up on"; done
for id in "$NOTEBOOK" "$NOTEBOOK2"; do echo "job $id says:"; show_log "$id" 0 notebook; done

say "research/vision bursts three 8-GPU trainings (grace 60 s): one on its floor, two borrow nlp's idle H100"
VIT=()
for i in 1 2 3; do
    VIT+=("$(submit --tenant research/vision --name "vit-$i" --gpus 8 --gpu-type H100 --grace 60 \
             -- python3 "$JOBS"/train.py 600 0.2)")
done
for id in "${VIT[@]}"; do until_true 20 "job $id running" is_state "$id" running; done
gp jobs
sleep 3   # let them train a few steps

say "research/nlp comes back: a 2 x 8 H100 gang (grace 60 s) inside its guarantee -> the engine reclaims"
T0=$(date +%s.%N)
NLP=$(submit --tenant research/nlp --name llm-pretrain --replicas 2 --gpus 8 --gpu-type H100 \
      --grace 60 -- python3 "$JOBS"/train.py 600 0.2)
gp job "$NLP" | sed -n '/^state/,/^reason/p'
until_true 60 "the gang running" is_state "$NLP" running
T1=$(date +%s.%N)
python3 -c 'import sys; print("the gang runs %.1f s after its submit, though the victims had 60 s of grace: they checkpointed"
                % (float(sys.argv[2]) - float(sys.argv[1])))' "$T0" "$T1"
for id in "${VIT[@]}"; do
    gp --json job "$id" | json 'any(h["kind"] == "preempt" for h in j["history"])' | grep -q True || continue
    echo "job $id (research/vision, preempted) history:"
    history_of "$id" | sed 's/^/  /'
    echo "  its replica's log:"; show_log "$id" 0 "SIGTERM|checkpoint"
done
until_true 20 "both ranks' first line" has_log_line "$NLP" 1 rank
echo "the gang's replicas say:"
show_log "$NLP" 0 "^job"
show_log "$NLP" 1 "^job"

say "A GPU fault: XID 48 (double-bit ECC: reset the GPU) on the GPU of ranker-1 (job $RANKER1)"
BIND1=$(gp --json job "$RANKER1" | json 'j["bind_time"]')
read -r NODE GPU < <(gp --json job "$RANKER1" | json 'j["placement"][0]["node"] + " " + j["placement"][0]["gpus"][0]')
GPU_INDEX=$(gp --json nodes | json 'next(g["index"] for n in j["nodes"] if n["name"] == a[0] for g in n["gpus"] if g["uuid"] == a[1] or "%s/%s" % (n["name"], g["index"]) == a[1])' "$NODE" "$GPU")
"$BIN"/gpupool-agent fault --node-file "$NODES" --fault-file "$VAR"/faults --node "$NODE" --gpu "$GPU_INDEX" --xid 48
echo "injected on $NODE GPU $GPU_INDEX"
gpu_unhealthy() { gp --json nodes | json 'any(not g["healthy"] for n in j["nodes"] if n["name"] == a[0] for g in n["gpus"])' "$NODE" | grep -q True; }
restarted() { gp --json job "$RANKER1" | json 'j["state"] == "running" and j["bind_time"] != int(a[0])' "$BIND1" | grep -q True; }
until_true 20 "GPU $GPU_INDEX of $NODE unhealthy" gpu_unhealthy
until_true 30 "ranker-1 running again" restarted
gp --json nodes | json '["%s GPU %d: %s" % (a[0], g["index"], "healthy" if g["healthy"] else "UNHEALTHY") for n in j["nodes"] if n["name"] == a[0] for g in n["gpus"]][:3]' "$NODE"
echo "job $RANKER1 (ranker-1) history:"
history_of "$RANKER1" | sed 's/^/  /'
second_run() { [[ $(ls "$VAR"/agent/*/logs/job"$RANKER1"-r0-*.log 2>/dev/null | wc -l) -ge 2 ]] && has_log_line "$RANKER1" 0 "up on"; }
until_true 20 "ranker-1's second run" second_run
echo "  and its second run says:"; show_log "$RANKER1" 0 "up on"

say "Where everything runs now"
gp jobs

say "The month's bill, from the hash-chained usage ledger: floors held, burst used, idle GPU-hours"
MONTH=$(date -u +%Y-%m)
gp prices set --effective "$MONTH-01T00:00:00Z" --backdate --gpu H100=2.50,A100=1.20,L40S=0.80 \
    --premium nvlink=1.10,block=1.25 >/dev/null
gp prices mode research chargeback >/dev/null
gp bill --period "$MONTH"
gp ledger verify

say "The audit log: every change above, hash-chained"
gp audit --limit 5
gp audit verify

if [[ -n "$IMAGE" ]]; then
    say "product/ads (untrusted) runs a job on a MIG slice, in a container pulled from the demo's registry, and it attacks"
    ATTACK=$(submit --tenant product/ads --name probe --gpu-type A100 --mig 1g.10gb --image "$IMAGE" -- sh -c \
        'echo "probe: processes I can see: $(ls /proc | grep -c "^[0-9]")";
         unshare -U -r true 2>/dev/null && echo "probe: root in a user namespace" || echo "probe: unshare -Ur: refused";
         answer=$(printf "GET /v1/nodes HTTP/1.0\r\n\r\n" | nc -w 2 127.0.0.1 '"$(cat "$VAR"/port)"' 2>/dev/null | head -n 1);
         echo "probe: gpupoold on 127.0.0.1 answered: ${answer:-nothing (the network fence)}"; echo "probe: done"')
    probe_ended() { is_state "$ATTACK" succeeded || { is_state "$ATTACK" failed && gp why "$ATTACK" && false; }; }
    until_true 60 "the probe's end" probe_ended
    until_true 20 "the probe's log" has_log_line "$ATTACK" 0 "probe: done"
    echo "job $ATTACK (product/ads, in a container from $IMAGE) says:"
    gp logs "$ATTACK" | grep "^probe" | sed 's/^/    /'
    AGAIN=$(submit --tenant product/ads --name again --gpu-type A100 --mig 1g.10gb --image "$IMAGE" -- true)
    until_true 60 "the second job from $IMAGE" is_state "$AGAIN" succeeded
    echo "job $AGAIN, from the same image, found it in the node's store (a hit)"
    "$BIN"/gpupool-agent image list --store "$(realpath "$VAR")"/agent/images |
        json '"the node'"'"'s image store: %d image(s), %.1f MiB; pulls that found the image there (hits): %d, that fetched it (misses): %d, hit rate %s; pre-pulls of gpupoold'"'"'s hints: %d" % (len(j["images"]), j["used_bytes"] / 1048576, j["hits"], j["misses"], "n/a" if j["hit_rate"] is None else "%.0f %%" % (100 * j["hit_rate"]), j["warm"])'
fi

if [[ "${DEMO_ONCE:-}" == "1" ]]; then
    say "DEMO_ONCE=1: stopping the agent (and its replicas) and gpupoold"
    exit 0
fi
say "gpupoold and the agent keep running.  In another shell:"
if [[ "${DEMO_CONFIG:-1}" != 0 ]]; then
    { read -r CONFIG_FILE; read -r CONFIG_KEPT; } < <(./scripts/demo-config.sh write "$GPUPOOL_SERVER" "$PWD/$VAR/admin.token")
    CONFIG_WRITTEN=1
    echo "  (your gpupool CLI now points at this demo: $CONFIG_FILE has its server and admin token file"
    if [[ -n "$CONFIG_KEPT" ]]; then
        echo "   your own config is kept as $CONFIG_KEPT and put back when the demo stops)"
    else
        echo "   and is removed when the demo stops; DEMO_CONFIG=0 leaves the config alone)"
    fi
else
    echo "  export GPUPOOL_SERVER=$GPUPOOL_SERVER GPUPOOL_TOKEN_FILE=$PWD/$VAR/admin.token"
fi
echo "  ./build/bin/gpupool jobs | nodes | job $NLP | logs $NLP --replica 1 --follow | usage"
echo "  ./build/bin/gpupool-agent fault --node-file $NODES --fault-file $VAR/faults --node h100-a-0 --gpu 0 --xid 79"
echo "Replica logs: $VAR/agent/NODE/logs/; agent log: $VAR/agent.log.  Ctrl-C stops it all."
wait "$DAEMON"
