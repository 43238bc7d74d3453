package job

import "time"

// testJob is a job over one input file and one endpoint, as the pipeline's
// tests make theirs.
func testJob(input, out, url string) Job {
	j := DefaultJob()
	j.Input.Paths = []string{input}
	j.Out = out
	j.Rollout.BaseURL = url
	j.Rollout.Model = "simulated"
	j.Rollout.N = 4
	j.Limits.Concurrency = 32
	j.Limits.AttemptTimeout = 2 * time.Second
	j.Limits.MaxAttempts = 8
	j.Prices = map[string]Price{"simulated": {Prompt: 1, Completion: 2}}
	j.Output.ShardRows = 7
	j.Output.CheckpointInterval = time.Second
	return j
}
