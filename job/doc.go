// Package job owns a distill job's configuration: the Job type and its
// defaults, the YAML job file with its field-naming errors, validation, the
// stage and mode names its sections use, budget scopes and a worker's share,
// partitions of the input, the judges' panels (resolved against their
// stage and checked at load time) and the order a judge sees items in
// (OrderPermutation), and the job's identity: the fingerprint of the
// settings that change what a run produces, the problem ids and the
// train/validation/test split drawn from them. It imports no package that
// runs a job.
package job
