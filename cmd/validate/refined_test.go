package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
	"github.com/rubricforge/rubricforge/refine"
)

// TestValidateRefinedCorpus: on a corpus distill refine made, validate says
// that every judged rollout of its refined records decided their items (so
// its own AUROCs are in-sample), reports the held-out figures refine.json
// holds, and --min-auroc checks the held-out figure, not the higher
// in-sample one.
func TestValidateRefinedCorpus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "refined")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: 100, Rollouts: 16, Seed: 5}, nil); err != nil {
		t.Fatal(err)
	}
	// The refinement is the setup, made by the built (not race-instrumented)
	// distill refine with its default options; validate is what is tested.
	if out, err := exec.Command(testbin.Command(t, "cmd/distill"), "refine", src, "--out", dst).CombinedOutput(); err != nil {
		t.Fatalf("distill refine: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dst, refine.SummaryName))
	if err != nil {
		t.Fatal(err)
	}
	var sum refine.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{dst, "--json"}, &stdout, &stderr, noEnv); code != exitOK {
		t.Fatalf("validate --json: exit %d\n%s", code, stderr.String())
	}
	var rep struct {
		Discrimination struct {
			MeanAUROC float64 `json:"mean_auroc"`
			Refined   *struct {
				Fingerprint  string `json:"fingerprint"`
				RolloutsUsed string `json:"rollouts_used"`
				HeldOut      struct {
					WithAnswer struct {
						After float64    `json:"after"`
						CI    [2]float64 `json:"after_ci95"`
					} `json:"with_answer"`
				} `json:"heldout"`
			} `json:"refined"`
		} `json:"discrimination"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	r := rep.Discrimination.Refined
	want := sum.ByScheme["rubric"].HeldOut.WithAnswer
	if r == nil || r.Fingerprint != sum.Fingerprint || !strings.Contains(r.RolloutsUsed, "every judged rollout") || r.HeldOut.WithAnswer.After != want.After {
		t.Fatalf("refined: %+v; want the refinement %s, its rollouts named, held-out AUROC %v", r, sum.Fingerprint, want.After)
	}
	inSample := rep.Discrimination.MeanAUROC
	if !(want.After < inSample) {
		t.Fatalf("held-out %v not below in-sample %v: the test shows nothing", want.After, inSample)
	}
	stdout.Reset()
	if code := run([]string{dst}, &stdout, &stderr, noEnv); code != exitOK {
		t.Fatalf("validate: exit %d", code)
	}
	for _, w := range []string{"in-sample", "held out", sum.Fingerprint} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("the text does not say %q:\n%s", w, stdout.String())
		}
	}
	stderr.Reset()
	between := fmt.Sprintf("%.4f", (want.After+inSample)/2)
	if code := run([]string{dst, "--min-auroc", between}, &stdout, &stderr, noEnv); code != exitFailed || !strings.Contains(stderr.String(), "held-out") {
		t.Errorf("--min-auroc %s between the held-out %v and the in-sample %v: exit %d, %s; want 1 naming the held-out figure", between, want.After, inSample, code, stderr.String())
	}
}

func noEnv(string) string { return "" }
