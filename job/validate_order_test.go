package job

import (
	"errors"
	"strings"
	"testing"
)

// TestMissingEndpointsComeLast: a job with a real mistake and no endpoint
// names the mistake first, and the missing endpoint and model once each
// (the other stages use the rollout's), not eight "not given" lines before
// the cause (issue 43, item 10).
func TestMissingEndpointsComeLast(t *testing.T) {
	j := DefaultJob()
	j.Input.Paths, j.Out = []string{"x.jsonl"}, "run"
	j.Judge.Mode = "batchh"
	j.Normalize()
	var ue *UsageError
	if !errors.As(j.Validate(), &ue) {
		t.Fatal("no usage error")
	}
	if !strings.HasPrefix(ue.Problems[0], "judge.mode") {
		t.Errorf("the first problem is %q, not the mistake", ue.Problems[0])
	}
	notGiven := 0
	for _, p := range ue.Problems {
		if strings.Contains(p, "given") {
			notGiven++
		}
	}
	if notGiven != 2 || !strings.Contains(ue.Problems[len(ue.Problems)-2], "rollout.base_url") || !strings.Contains(ue.Problems[len(ue.Problems)-1], "rollout.model") {
		t.Errorf("problems:\n%s", strings.Join(ue.Problems, "\n"))
	}
}
