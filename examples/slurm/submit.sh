#!/bin/bash
# Submits the distill workers as one array job of PARTITIONS tasks and the
# merge as a job that starts once every task has succeeded:
#   PARTITIONS=16 JOB_FILE=job.yaml RUNS=runs/big examples/slurm/submit.sh
# Then: distill status runs/big/part-*   (on any node that sees the file system)
#
# When a task failed (exit 1: an endpoint down, a quota; or 2: a bad job
# file), the merge's afterok can never be met and Slurm leaves it pending
# (DependencyNeverSatisfied). Fix the cause, then
#   PARTITIONS=16 JOB_FILE=job.yaml RUNS=runs/big examples/slurm/submit.sh --resume
# cancels that merge, submits again only the tasks whose worker has not
# finished (each resumes its own run directory, paying nothing twice), and
# queues a new merge after them. --merge queues the merge alone, with no
# dependency: once `distill status` shows every worker finished.
# The job ids of the last submission are kept in $RUNS/slurm-jobs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-submit}
case $mode in
submit | --resume | --merge) ;;
*)
	echo "usage: PARTITIONS=K JOB_FILE=job.yaml RUNS=runs/big $0 [--resume | --merge]" >&2
	exit 2
	;;
esac
k=${PARTITIONS:-16}
if ! [[ $k =~ ^[0-9]+$ ]] || [ "$k" -lt 1 ]; then
	echo "PARTITIONS=$k is not a positive number" >&2
	exit 2
fi
export PARTITIONS=$k JOB_FILE=${JOB_FILE:-job.yaml} RUNS=${RUNS:-runs/big}
state=$RUNS/slurm-jobs

# jobid strips the cluster from sbatch --parsable's JOBID;CLUSTER.
jobid() { echo "${1%%;*}"; }

# finished I: worker I's run directory says it finished.
finished() {
	grep -Eq '"status": *"finished"' "$RUNS/part-$1/report.json" 2>/dev/null
}

queue_merge() { # queue_merge [DEPENDENCY]
	local dep=()
	if [ -n "${1:-}" ]; then dep=(--dependency="afterok:$1"); fi
	jobid "$(sbatch --parsable "${dep[@]}" --export=ALL "$here/distill-merge.sbatch")"
}

mkdir -p "$RUNS"
case $mode in
submit)
	array=$(jobid "$(sbatch --parsable --array="0-$((k - 1))" --export=ALL "$here/distill-array.sbatch")")
	merge=$(queue_merge "$array")
	printf 'array=%s\nmerge=%s\n' "$array" "$merge" >"$state"
	echo "workers: array job $array ($k tasks); merge: job $merge, after every task succeeds"
	;;
--merge)
	merge=$(queue_merge)
	printf 'merge=%s\n' "$merge" >>"$state"
	echo "merge: job $merge (no dependency; distill merge refuses, naming them, workers that have not finished)"
	;;
--resume)
	if [ -f "$state" ]; then
		old=$(sed -n 's/^merge=//p' "$state" | tail -1)
		if [ -n "$old" ]; then
			scancel "$old" 2>/dev/null || true
			echo "cancelled the merge job $old that waited on the earlier tasks"
		fi
	fi
	todo=()
	for ((i = 0; i < k; i++)); do
		finished "$i" || todo+=("$i")
	done
	if [ ${#todo[@]} -eq 0 ]; then
		merge=$(queue_merge)
		printf 'merge=%s\n' "$merge" >>"$state"
		echo "every worker has finished; merge: job $merge"
		exit 0
	fi
	list=$(
		IFS=,
		echo "${todo[*]}"
	)
	array=$(jobid "$(sbatch --parsable --array="$list" --export=ALL "$here/distill-array.sbatch")")
	merge=$(queue_merge "$array")
	printf 'array=%s\nmerge=%s\n' "$array" "$merge" >>"$state"
	echo "workers: array job $array (tasks $list of $k, the unfinished ones); merge: job $merge, after they succeed"
	;;
esac
