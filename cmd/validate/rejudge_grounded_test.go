package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestRejudgeGroundedCommand: validate rejudge on a grounded corpus
// re-judges its criteria against their passage (grounded_judge_batch, the
// passage cut to --judge-passage-tokens as distill run cuts it), reports
// them by type "criterion", and --order-check asks each question's
// criteria in both orders; a budget below what a judge can grade against
// is a usage error that names the flag.
func TestRejudgeGroundedCommand(t *testing.T) {
	t.Parallel()
	srv, url, stop, err := sim.Start(sim.Config{Seed: 2, KeepLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeGroundedRun(t)
	type result struct {
		Judge struct {
			Template         string `json:"template"`
			GroundedTemplate string `json:"grounded_template"`
		} `json:"judge"`
		Sample    struct{ Drawn, Judged, Records int }
		Agreement struct {
			Items  int64
			ByType []struct{ Type string } `json:"by_type"`
		}
		OrderCheck *struct{ Records, Items int } `json:"order_check"`
	}
	base := []string{"rejudge", dir, "--base-url", url, "--model", "simulated", "--cache", "", "--judge-passage-tokens", "512", "--json"}
	for _, extra := range [][]string{{"--sample", "10"}, {"--order-check", "5"}} {
		code, stdout, stderr := validate(t, nil, append(base, extra...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr)
		}
		var r result
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		if r.Sample.Drawn != 4 || r.Sample.Judged != 4 || r.Sample.Records != 2 || r.Agreement.Items != 4 {
			t.Errorf("%v: sample %+v, agreement over %d; want the 4 criteria of 2 questions", extra, r.Sample, r.Agreement.Items)
		}
		if len(r.Agreement.ByType) != 1 || r.Agreement.ByType[0].Type != "criterion" {
			t.Errorf("%v: by type %+v; want criterion", extra, r.Agreement.ByType)
		}
		if r.Judge.GroundedTemplate == "" || r.Judge.Template != "" {
			t.Errorf("%v: judge templates %+v; want the grounded one only", extra, r.Judge)
		}
		if extra[0] == "--order-check" && (r.OrderCheck == nil || r.OrderCheck.Records != 2 || r.OrderCheck.Items != 4) {
			t.Errorf("order check %+v; want 2 questions of 2 criteria", r.OrderCheck)
		}
	}
	for _, e := range srv.Log() {
		if e.Kind != sim.KindGroundedJudgeBatch {
			t.Errorf("a request of kind %s", e.Kind)
		}
	}
	code, _, stderr := validate(t, nil, "rejudge", dir, "--base-url", url, "--model", "simulated", "--cache", "", "--judge-passage-tokens", "10")
	if code != exitUsage || !strings.Contains(stderr, "--judge-passage-tokens") {
		t.Errorf("a passage budget of 10 tokens: exit %d, stderr %q", code, stderr)
	}
}
