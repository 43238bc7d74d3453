package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestRejudgeGroupCommand: validate rejudge --judge-group N measures group
// judging on a corpus's response groups (every response alone, the group
// in one request in its order and reversed) and reports each judge's
// agreement and order check; with --order-check it is a usage error, and
// on a corpus without responses it exits 1 saying what it needs.
func TestRejudgeGroupCommand(t *testing.T) {
	t.Parallel()
	_, url, stop, err := sim.Start(sim.Config{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := writeRun(t, 6, nil) // two rollouts each, four items of which one may be invalid (left out)
	code, stdout, stderr := validate(t, nil, "rejudge", dir, "--base-url", url, "--model", "simulated", "--cache", "", "--judge-group", "4", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Sample struct{ Drawn, Judged, Responses int }
		Judges []struct {
			Judge      string
			Agreement  struct{ Items, Agree int64 }
			OrderCheck []struct {
				Type     string                       `json:"type"`
				Bias     *float64                     `json:"position_bias"`
				Interval *struct{ Low, High float64 } `json:"position_bias_interval"`
			} `json:"order_check"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Sample.Drawn != 4 || r.Sample.Judged != 4 || r.Sample.Responses != 8 || len(r.Judges) != 1 {
		t.Fatalf("report %+v", r)
	}
	if j := r.Judges[0]; j.Agreement.Items < 4*2*3 || j.Agreement.Items > 4*2*4 || j.Agreement.Agree != j.Agreement.Items || j.OrderCheck[0].Bias == nil || j.OrderCheck[0].Interval == nil {
		t.Errorf("judge %+v", j)
	}
	code, _, stderr = validate(t, nil, "rejudge", dir, "--base-url", url, "--model", "simulated", "--judge-group", "4", "--order-check", "3")
	if code != exitUsage || !strings.Contains(stderr, "--judge-group") {
		t.Errorf("--judge-group with --order-check: exit %d, %q", code, stderr)
	}
	code, _, stderr = validate(t, nil, "rejudge", writeGroundedRun(t), "--base-url", url, "--model", "simulated", "--cache", "", "--judge-group", "4")
	if code != exitFailed || !strings.Contains(stderr, "no response group") {
		t.Errorf("a corpus without responses: exit %d, %q", code, stderr)
	}
}

// TestGroupJSONDocumented: every key of validate rejudge --judge-group's
// JSON report (with a panel, so the panel section is there) is in
// docs/validate-agreement.md: in the group paragraph's list, or in the
// rejudge list its agreement, disagreements and order check refer to.
func TestGroupJSONDocumented(t *testing.T) {
	t.Parallel()
	docs := validateDocs(t)
	doc := documentedAgreement(t, docs)
	at := strings.Index(docs, "Its `--json`:")
	if at < 0 {
		t.Fatal("docs/validate-agreement.md: the --judge-group keys are not found")
	}
	para := docs[at:]
	for k := range identifiers(para[:strings.Index(para, "\n\n")]) {
		doc[k] = true
	}
	_, url, stop, err := sim.Start(sim.Config{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	panel := filepath.Join(t.TempDir(), "panel.yaml")
	os.WriteFile(panel, []byte("- model: simulated\n- model: other\n"), 0o644)
	code, stdout, stderr := validate(t, nil, "rejudge", writeRun(t, 3, nil), "--panel", panel, "--base-url", url, "--cache", "",
		"--judge-group", "2", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for p := range reportPaths(t, stdout) {
		if k := lastKey(p); !doc[k] {
			t.Errorf("key %s of the --judge-group report is not in docs/validate-agreement.md", p)
		}
	}
}
