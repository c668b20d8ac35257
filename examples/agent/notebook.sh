#!/bin/sh
# notebook.sh - an interactive notebook session, as `make demo` runs it on a
# time-sliced L40S: it says where it runs, then "executes a cell" every few
# seconds until its time limit (or a cancel) stops it.  A notebook keeps no
# checkpoint: SIGTERM ends it at once.
#
#   notebook.sh [CELL_S]     one cell every CELL_S seconds (default 3)
cell_s=${1:-3}
trap 'echo "notebook: SIGTERM, kernel shut down"; exit 0' TERM
echo "notebook of $GPUPOOL_TENANT (job $GPUPOOL_JOB_ID) on $CUDA_VISIBLE_DEVICES, a turn of a shared GPU"
n=0
while :; do
    sleep "$cell_s" &
    wait $!
    n=$((n + 1))
    echo "In [$n]: executed"
done
