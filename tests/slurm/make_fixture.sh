#!/bin/sh
# make_fixture.sh - run a real Slurm on this machine, submit a few hundred
# short jobs, and save what sacct and scontrol say about them as the
# fixtures of `gpupool-sim --trace slurm:FILE` (tests/fixtures/slurm/).
#
# Needs Debian 12's slurm-wlm 22.05, slurmdbd, mariadb-server and munge
# (apt-get install -y slurm-wlm slurmctld slurmd slurm-client slurmdbd
# munge mariadb-server mariadb-client); run as root.  Not part of make
# test: the fixtures it writes are committed.  Everything runs on
# loopback from a throw-away directory and is stopped by its own pids
# (facts: ../shared/notes/slurm-testbed.md).
#
# The cluster: 4 nodes of 8 h100 and 2 nodes of 4 a100 (fake GPUs:
# character devices 1:3), fair-share priority, backfill.  The workload:
# accounts vision, nlp (org research) and speech, infra (org product),
# one user each; jobs of 1-8 GPUs on one node and 2 x 8 gangs; sleeps
# scaled so that 1 s stands for 1 min of a real month (replay with
# --time-scale 60); some jobs outrun their time limit (TIMEOUT), some are
# cancelled while pending, one fails.
#
# Side effect: a local user u_<account> per account (useradd -M; kept).
# usage: tests/slurm/make_fixture.sh [OUT_DIR]   (default tests/fixtures/slurm)
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$here/tests/fixtures/slurm}
seed=${FIXTURE_SEED:-37}
work=$(mktemp -d /tmp/slurm-fixture.XXXXXX)
chmod 0755 "$work" # jobs run as the accounts' users and read their scripts from the spool
pids=""
stop() {
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    sleep 1
    for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
}
trap stop EXIT INT TERM

update-alternatives --set slurmctld /usr/sbin/slurmctld-wlm >/dev/null
update-alternatives --set slurmd /usr/sbin/slurmd-wlm >/dev/null

# ---- munge with a throw-away key
mkdir -p "$work/munge"
dd if=/dev/urandom of="$work/munge/key" bs=1024 count=1 2>/dev/null
chmod 0400 "$work/munge/key"
chmod 0755 "$work/munge"
sock=$work/munge/munge.socket.2
munged -F --force --socket="$sock" --key-file="$work/munge/key" --pid-file="$work/munge/pid" \
    --seed-file="$work/munge/seed" --log-file="$work/munge/log" &
pids="$pids $!"

# ---- MariaDB for slurmdbd, TCP on loopback
dbport=$((20000 + $$ % 1000))
mkdir -p "$work/db"
mariadb-install-db --datadir="$work/db" --user=root --auth-root-authentication-method=socket >/dev/null
mariadbd --datadir="$work/db" --user=root --socket="$work/db/sock" --port=$dbport --bind-address=127.0.0.1 \
    --pid-file="$work/db/pid" --log-error="$work/db/err.log" &
pids="$pids $!"
for i in $(seq 60); do mariadb --socket="$work/db/sock" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
mariadb --socket="$work/db/sock" -e "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'fixture';
    GRANT ALL ON *.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;"

# ---- slurm.conf, gres.conf, slurmdbd.conf
dbdport=$((dbport + 1)); ctlport=$((dbport + 2)); nodeport=$((dbport + 10))
mkdir -p "$work/dev" "$work/state" "$work/spool"
for i in 0 1 2 3 4 5 6 7; do mknod "$work/dev/nvidia$i" c 1 3; done
host=$(hostname -s)
cat >"$work/slurm.conf" <<CONF
ClusterName=fixture
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctlport
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/spool/slurmd-%n.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/spool/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_min_interval=200000
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityWeightAge=100
PriorityDecayHalfLife=0-00:10:00
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbdport
AccountingStoragePass=$sock
AccountingStorageTRES=gres/gpu,gres/gpu:h100,gres/gpu:a100
AccountingStorageEnforce=associations
JobCompType=jobcomp/none
MinJobAge=30
KillWait=2
GresTypes=gpu
CONF
# each slurmd its own port and a unique dummy hostname
{
    for n in h1 h2 h3 h4; do
        echo "NodeName=$n NodeAddr=127.0.0.1 NodeHostname=fake-$n Port=$nodeport CPUs=64 RealMemory=512000 Gres=gpu:h100:8 Feature=h100,ib State=UNKNOWN"
        nodeport=$((nodeport + 1))
    done
    for n in a1 a2; do
        echo "NodeName=$n NodeAddr=127.0.0.1 NodeHostname=fake-$n Port=$nodeport CPUs=32 RealMemory=256000 Gres=gpu:a100:4 Feature=a100 State=UNKNOWN"
        nodeport=$((nodeport + 1))
    done
    echo "PartitionName=gpu Nodes=h[1-4],a[1-2] Default=YES MaxTime=UNLIMITED State=UP"
} >>"$work/slurm.conf"
cat >"$work/gres.conf" <<CONF
NodeName=h[1-4] Name=gpu Type=h100 File=$work/dev/nvidia[0-7]
NodeName=a[1-2] Name=gpu Type=a100 File=$work/dev/nvidia[0-3]
CONF
cat >"$work/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$sock
DbdAddr=127.0.0.1
DbdHost=localhost
DbdPort=$dbdport
SlurmUser=root
CommunicationParameters=NoInAddrAny
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$dbport
StorageUser=slurm
StoragePass=fixture
StorageLoc=slurm_acct_db
PidFile=$work/slurmdbd.pid
LogFile=$work/slurmdbd.log
CONF
chmod 0600 "$work/slurmdbd.conf"
export SLURM_CONF=$work/slurm.conf

slurmdbd -D &   # reads slurmdbd.conf next to $SLURM_CONF
pids="$pids $!"
for i in $(seq 60); do sacctmgr -i show cluster >/dev/null 2>&1 && break; sleep 0.5; done
sacctmgr -i add cluster fixture >/dev/null
sacctmgr -i add account research,product Cluster=fixture >/dev/null
sacctmgr -i add account vision,nlp Parent=research Cluster=fixture >/dev/null
sacctmgr -i add account speech,infra Parent=product Cluster=fixture >/dev/null
for a in vision nlp speech infra; do
    id "u_$a" >/dev/null 2>&1 || useradd -M -s /bin/sh "u_$a"
    sacctmgr -i add user "u_$a" Account=$a Cluster=fixture >/dev/null
done

/usr/sbin/slurmctld -D -f "$work/slurm.conf" &
pids="$pids $!"
for n in h1 h2 h3 h4 a1 a2; do
    mkdir -p "$work/spool/$n"
    slurmd -D -N $n -f "$work/slurm.conf" &
    pids="$pids $!"
done
for i in $(seq 120); do
    [ "$(sinfo -h -o %t 2>/dev/null | sort -u)" = "idle" ] && break
    sleep 0.5
done
sinfo

# ---- the workload: a deterministic mix from the seed (awk's srand)
awk -v seed="$seed" 'BEGIN {
    srand(seed);
    split("vision nlp speech infra", acct, " ");
    for (j = 0; j < 260; j++) {
        a = acct[1 + int(rand() * 4)];
        if (j < 60 && a == "infra") a = "vision";   # vision starts with a burst
        r = rand();
        if (r < 0.30) { shape = "h100:1"; nodes = 1 }
        else if (r < 0.50) { shape = "h100:2"; nodes = 1 }
        else if (r < 0.62) { shape = "h100:4"; nodes = 1 }
        else if (r < 0.72) { shape = "h100:8"; nodes = 1 }
        else if (r < 0.80) { shape = "h100:8"; nodes = 2 }
        else if (r < 0.92) { shape = "a100:" (1 + int(rand() * 4)); nodes = 1 }
        else { shape = (1 + int(rand() * 2)); nodes = 1 }          # any type: gres/gpu=N
        secs = 3 + int(rand() * rand() * 40);
        limit = "";
        if (rand() < 0.06) { secs = 75; limit = "--time=1" }       # will hit its time limit
        else if (rand() < 0.5) limit = "--time=" (1 + int(secs / 60) + 1);
        gap = (rand() < 0.15) ? 0 : rand() * 0.9;                   # bursts and gaps
        cancel = (rand() < 0.04) ? 1 : 0;
        printf "%s %s %d %d %s %.2f %d\n", a, shape, nodes, secs, limit == "" ? "-" : limit, gap, cancel;
    }
}' >"$work/jobs.txt"

cancels=""
n=0
while read -r a shape nodes secs limit gap cancel; do
    [ "$limit" = "-" ] && limit=""
    cmd="sleep $secs"
    [ $((n % 97)) -eq 50 ] && cmd="sleep 2; exit 3"                  # a failed job
    id=$(sbatch --parsable -A "$a" --uid="u_$a" --gid="u_$a" -N "$nodes" --ntasks-per-node=1 \
        --gres="gpu:$shape" -c 2 --mem=8G $limit -o /dev/null --chdir=/tmp -J "$a-$n" --wrap "$cmd")
    if [ "$cancel" = 1 ]; then
        cancels="$cancels $id"
        scancel --state=PENDING "$id" 2>/dev/null || true
    fi
    n=$((n + 1))
    sleep "$gap"
done <"$work/jobs.txt"
echo "submitted $n jobs; waiting for the queue to drain"
for i in $(seq 1200); do
    [ -z "$(squeue -h -o %i)" ] && break
    sleep 1
done
sleep 3

mkdir -p "$out"
sacct --allocations --parsable2 --allusers --starttime=2000-01-01 \
    --format=JobID,Account,User,Partition,QOS,Submit,Start,End,Elapsed,Timelimit,State,ReqTRES,AllocTRES,NodeList \
    >"$out/sacct.txt"
scontrol show nodes --oneliner >"$out/nodes.txt"
sacctmgr -P show assoc format=Cluster,Account,ParentName,User,Share,GrpTRES >"$out/assoc.txt"
sed "s|$work|WORK|g" "$work/slurm.conf" >"$out/slurm.conf"
echo "fixture written to $out ($(($(wc -l <"$out/sacct.txt") - 1)) sacct rows)"
