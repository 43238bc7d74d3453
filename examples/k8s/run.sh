#!/bin/bash
# The Kubernetes flow of examples/k8s, workers then merge, with the image
# pinned once:
#   IMAGE=registry.example.com/team/rubricforge:v1.2.0 examples/k8s/run.sh           workers, then the merge and export
#   IMAGE=registry.example.com/team/rubricforge@sha256:... examples/k8s/run.sh merge  the merge alone (the workers completed)
#   IMAGE=... examples/k8s/run.sh rewardd                                          serve the export (rewardd.yaml)
# IMAGE is the image `make image` built and you pushed, by tag or digest; it
# takes the place of rubricforge:VERSION in every manifest applied. :latest
# and an image with neither tag nor digest are refused.
#
# It applies storage.yaml, distill-config.yaml and distill-job.yaml, then
# waits for the Job distill-big to complete or fail. Completed: it applies
# distill-merge.yaml and waits for the merge. Failed: it names the failed
# indexes, applies nothing more and exits 1; fix the cause (kubectl logs),
# then `kubectl delete job distill-big` and run this again: every index
# resumes from its own run directory, and those that had finished find
# nothing to do.
#
# A Job that is gone while this waits (deleted, or removed by a TTL) ends the
# wait with exit 1, as do RETRIES looks in a row that could not read it (the
# API server unreachable).
#
# Settings (environment): KUBECTL (default kubectl), POLL seconds between
# looks at the Job (default 30), RETRIES looks in a row that may fail
# (default 10), NAMESPACE (default: kubectl's).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kubectl=${KUBECTL:-kubectl}
poll=${POLL:-30}
retries=${RETRIES:-10}
ns=()
if [ -n "${NAMESPACE:-}" ]; then ns=(--namespace "$NAMESPACE"); fi
mode=${1:-all}
case $mode in
all | merge | rewardd) ;;
*)
	echo "usage: IMAGE=REGISTRY/rubricforge:TAG $0 [all|merge|rewardd]" >&2
	exit 2
	;;
esac

image=${IMAGE:-}
if [ -z "$image" ]; then
	echo "set IMAGE to the image you built with make image and pushed, by tag or digest (IMAGE=registry.example.com/team/rubricforge:v1.2.0)" >&2
	exit 2
fi
name=${image%@*}
name=${name##*/}
if [[ $image == *:latest || $image == *:latest@* ]]; then
	echo "IMAGE=$image: refusing :latest; a new image pushed under it mid-job would make resumed pods run another version (pin a version tag or a digest)" >&2
	exit 2
fi
if [[ $image != *@sha256:* && $name != *:* ]]; then
	echo "IMAGE=$image names no tag or digest; pin a version tag (:v1.2.0) or a digest (@sha256:...)" >&2
	exit 2
fi

apply() {
	echo "applying $1 with image $image" >&2
	sed "s|image: rubricforge:VERSION|image: $image|" "$here/$1" | "$kubectl" "${ns[@]}" apply -f -
}

# wait_job JOB prints Complete or Failed once the Job has one of them, Gone
# when the Job no longer exists, or Unreadable after RETRIES looks in a row
# that could not read it; it says why on stderr.
wait_job() {
	local out misses=0
	while :; do
		if out=$("$kubectl" "${ns[@]}" get job "$1" -o 'jsonpath={range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}' 2>&1); then
			misses=0
			case " $out " in
			*" Complete "*)
				echo Complete
				return
				;;
			*" Failed "*)
				echo Failed
				return
				;;
			esac
		else
			case $out in
			*NotFound* | *"not found"*)
				echo "the Job $1 is gone (deleted while this waited, or removed by a TTL): $out" >&2
				echo Gone
				return
				;;
			esac
			misses=$((misses + 1))
			if [ "$misses" -ge "$retries" ]; then
				echo "could not read the Job $1 $misses times in a row (RETRIES=$retries): $out" >&2
				echo Unreadable
				return
			fi
		fi
		sleep "$poll"
	done
}

if [ "$mode" = rewardd ]; then
	apply rewardd.yaml
	exit 0
fi

if [ "$mode" = all ]; then
	apply storage.yaml
	apply distill-config.yaml
	apply distill-job.yaml
	echo "waiting for the workers (Job distill-big); distill status /runs/big/part-* from any pod that mounts /runs shows their progress" >&2
	workers=$(wait_job distill-big)
	case $workers in
	Gone | Unreadable)
		cat >&2 <<MSG
the workers' Job distill-big is gone or cannot be read; the merge was not applied.
  see the workers' state: distill status /runs/big/part-* (from any pod that mounts /runs)
  then run the flow again: IMAGE=$image $0   (every index resumes from /runs/big/part-INDEX)
  or, once every worker has finished: IMAGE=$image $0 merge
MSG
		exit 1
		;;
	esac
	if [ "$workers" = Failed ]; then
		failed=$("$kubectl" "${ns[@]}" get job distill-big -o 'jsonpath={.status.failedIndexes}')
		cat >&2 <<MSG
the workers' Job distill-big failed: indexes ${failed:-?} ran out of retries; the merge was not applied.
  see why:    $kubectl logs -l job-name=distill-big,batch.kubernetes.io/job-completion-index=INDEX --tail=50
  then, once the cause is fixed (an endpoint down, a quota, a bad job file):
              $kubectl delete job distill-big && IMAGE=$image $0
  every index resumes from /runs/big/part-INDEX; those that finished find nothing left to do.
MSG
		exit 1
	fi
fi

apply distill-merge.yaml
echo "waiting for the merge (Job distill-big-merge)" >&2
merged=$(wait_job distill-big-merge)
if [ "$merged" = Gone ] || [ "$merged" = Unreadable ]; then
	echo "the merge Job distill-big-merge is gone or cannot be read; a merge run again resumes: IMAGE=$image $0 merge" >&2
	exit 1
fi
if [ "$merged" = Failed ]; then
	echo "the merge failed: $kubectl logs job/distill-big-merge says why (distill merge names a missing, unfinished or different worker); once fixed: $kubectl delete job distill-big-merge && IMAGE=$image $0 merge" >&2
	exit 1
fi
echo "merged into /runs/big/all, exported to /runs/big/export; serve it with: IMAGE=$image $0 rewardd" >&2
