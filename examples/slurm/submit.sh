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
# finished and that are not still queued or running (squeue lists the tasks
# of the arrays submitted before; each task resumes its own run directory,
# paying nothing twice), and queues a new merge after them and the queued
# ones. --merge queues the merge alone, with no dependency: once
# `distill status` shows every worker finished.
# The job ids of every submission are kept in $RUNS/slurm-jobs.
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

queue_merge() { # queue_merge [JOB[:JOB...]]: the merge, after those jobs succeed
	local dep=()
	if [ -n "${1:-}" ]; then dep=(--dependency="afterok:$1"); fi
	jobid "$(sbatch --parsable "${dep[@]}" --export=ALL "$here/distill-merge.sbatch")"
}

# queued: the tasks of the arrays submitted before that are still queued or
# running, one "ARRAY_TASK" a line (Slurm's jobid_taskid). A job id Slurm no
# longer knows has none; any other failure of squeue stops --resume, which
# must not submit a task twice.
queued() {
	local id out
	for id in $(sed -n 's/^array=//p' "$state" 2>/dev/null); do
		if ! out=$(squeue --noheader --array --jobs="$id" --format='%F %K %T' 2>&1); then
			case $out in
			*"Invalid job id"*) continue ;;
			esac
			echo "cannot read the queue (squeue --jobs=$id): $out" >&2
			return 1
		fi
		echo "$out" | awk -v id="$id" '$1 == id && $2 ~ /^[0-9]+$/ { print $1 "_" $2 }'
	done
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
	waiting=$(queued) || exit 1
	todo=() held=() wait=()
	for ((i = 0; i < k; i++)); do
		finished "$i" && continue
		tasks=$(echo "$waiting" | grep -E "_$i\$" || true)
		if [ -n "$tasks" ]; then
			held+=("$i")
			wait+=($tasks)
		else
			todo+=("$i")
		fi
	done
	if [ ${#held[@]} -gt 0 ]; then
		echo "tasks $(IFS=,; echo "${held[*]}") still queued or running ($(IFS=' '; echo "${wait[*]}")); not submitted again"
	fi
	after=$(IFS=:; echo "${wait[*]}")
	if [ ${#todo[@]} -eq 0 ]; then
		merge=$(queue_merge "$after")
		printf 'merge=%s\n' "$merge" >>"$state"
		if [ -n "$after" ]; then
			echo "merge: job $merge, after the queued tasks succeed"
		else
			echo "every worker has finished; merge: job $merge"
		fi
		exit 0
	fi
	list=$(
		IFS=,
		echo "${todo[*]}"
	)
	array=$(jobid "$(sbatch --parsable --array="$list" --export=ALL "$here/distill-array.sbatch")")
	merge=$(queue_merge "$array${after:+:$after}")
	printf 'array=%s\nmerge=%s\n' "$array" "$merge" >>"$state"
	echo "workers: array job $array (tasks $list of $k, the unfinished ones); merge: job $merge, after they succeed"
	;;
esac
