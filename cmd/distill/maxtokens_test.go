package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/job"
)

// TestMaxTokensFlags: every stage's token limit can be set on the command
// line (--distill-max-tokens for the distiller and the grounded analyze,
// synthesize and enrich; --judge-max-tokens; --empirical-max-tokens), and
// a grounded job without them gets limits so that a model that does not
// stop cannot run each request to its context length (issue 43, item 7).
func TestMaxTokensFlags(t *testing.T) {
	jb, err := parseRunJob(t, "--input", "p.jsonl", "--out", "run", "--base-url", "http://127.0.0.1:1/v1", "--model", "m",
		"--distill-max-tokens", "3000", "--judge-max-tokens", "700", "--empirical-max-tokens", "900")
	if err != nil {
		t.Fatal(err)
	}
	if jb.Distill.MaxTokens != 3000 || jb.Judge.MaxTokens != 700 || jb.Empirical.MaxTokens != 900 {
		t.Errorf("max tokens: distill %d, judge %d, empirical %d", jb.Distill.MaxTokens, jb.Judge.MaxTokens, jb.Empirical.MaxTokens)
	}
	g, err := parseRunJob(t, "--style", "grounded", "--input", "docs", "--out", "run", "--base-url", "http://127.0.0.1:1/v1", "--model", "m")
	if err != nil {
		t.Fatal(err)
	}
	if g.Distill.MaxTokens != job.GroundedDistillMaxTokens || g.Judge.MaxTokens != job.GroundedJudgeMaxTokens || g.Empirical.MaxTokens != job.GroundedJudgeMaxTokens ||
		g.Distill.MaxTokens == 0 || g.Judge.MaxTokens == 0 {
		t.Errorf("grounded defaults: distill %d, judge %d, empirical %d", g.Distill.MaxTokens, g.Judge.MaxTokens, g.Empirical.MaxTokens)
	}
	var help bytes.Buffer
	run([]string{"run", "-h"}, &help, &help)
	for _, flag := range []string{"-distill-max-tokens", "-judge-max-tokens", "-empirical-max-tokens"} {
		if !strings.Contains(help.String(), flag) {
			t.Errorf("distill run -h does not list %s", flag)
		}
	}
}

// parseRunJob is the job distill run makes of args.
func parseRunJob(t *testing.T, args ...string) (job.Job, error) {
	t.Helper()
	f := newRunFlags()
	if err := f.fs.Parse(args); err != nil {
		return job.Job{}, err
	}
	var stderr bytes.Buffer
	jb, _, stop, _, ok := startJob("distill run", f, &stderr)
	if !ok {
		t.Fatalf("startJob: %s", stderr.String())
	}
	stop()
	return jb, nil
}
