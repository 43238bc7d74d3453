#!/bin/bash
# Submits the distill workers as one array job of PARTITIONS tasks and the
# merge as a job that starts once every task has succeeded:
#   PARTITIONS=16 JOB_FILE=job.yaml RUNS=runs/big examples/slurm/submit.sh
# Then: distill status runs/big/part-*   (on any node that sees the file system)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
k=${PARTITIONS:-16}
if ! [[ $k =~ ^[0-9]+$ ]] || [ "$k" -lt 1 ]; then
	echo "PARTITIONS=$k is not a positive number" >&2
	exit 2
fi
export PARTITIONS=$k JOB_FILE=${JOB_FILE:-job.yaml} RUNS=${RUNS:-runs/big}
array=$(sbatch --parsable --array="0-$((k - 1))" --export=ALL "$here/distill-array.sbatch")
array=${array%%;*} # --parsable prints JOBID or JOBID;CLUSTER
merge=$(sbatch --parsable --dependency="afterok:$array" --export=ALL "$here/distill-merge.sbatch")
merge=${merge%%;*}
echo "workers: array job $array ($k tasks); merge: job $merge, after every task succeeds"
