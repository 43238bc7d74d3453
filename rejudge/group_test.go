package rejudge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/corpusfix"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/schema"
)

// groupCorpus writes math records whose four rollouts differ, and
// grounded records whose questions have four closed-book answers each.
func groupCorpus(t *testing.T, math, grounded int) string {
	t.Helper()
	var recs []schema.Record
	for i := range math {
		recs = append(recs, corpusfix.Record(i, schema.StyleSRaR, nil, func(r *schema.Record) {
			for j := range r.Rollouts {
				r.Rollouts[j].Text = fmt.Sprintf("### Step 1: Set up problem %d, attempt %d.\n### Step 2: Work it out.\n<answer>%d</answer>", i, j, i+j%2)
				r.Rollouts[j].ExtractedAnswer = fmt.Sprint(i + j%2)
			}
		}))
	}
	recs = append(recs, reviewtest.GroundedRecords(grounded)...)
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 16)
	return dir
}

// TestRejudgeGroupAgreesAlone: validate rejudge --judge-group asks each
// judge about every drawn response alone, and about the whole group in
// one request in its drawn order and reversed (math and grounded alike).
// The simulated judge answers a group request response by response as it
// answers each alone, its flips included, so group judging must agree
// with one request per response on every verdict and the order changes
// nothing: what this checks is that every verdict maps back to its own
// response, whatever the order, and that the figures are counted right.
func TestRejudgeGroupAgreesAlone(t *testing.T) {
	t.Parallel()
	dir := groupCorpus(t, 2, 1)
	srv := sim.New(sim.Config{Seed: 5, KeepLog: true, Judges: map[string]sim.JudgeProfile{"noisy": {Flip: 0.2}}})
	cfg := rejudgeConfig(srv, "", 1, 1)
	cfg.Group = 100
	cfg.Panel = panelOf("simulated", "noisy")
	rep, err := RunGroup(context.Background(), openInput(t, dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Sample
	if s.Drawn != 2+2 || s.Judged != s.Drawn || s.Failed != 0 || s.Responses != 2*4+2*4 {
		t.Fatalf("sample %+v; want 2 records and 2 questions of 4 responses", s)
	}
	kinds := map[sim.Kind]int{}
	for _, e := range srv.Log() {
		kinds[e.Kind]++
	}
	if kinds[sim.KindSatisfy] != 2*8 || kinds[sim.KindSatisfyGroup] != 2*2*2 || kinds[sim.KindScoreGrounded] != 2*8 || kinds[sim.KindScoreGroundedGroup] != 2*2*2 {
		t.Errorf("requests by kind %v", kinds)
	}
	if len(rep.Judges) != 2 || rep.Panel == nil {
		t.Fatalf("judges %d, panel %v", len(rep.Judges), rep.Panel)
	}
	for _, j := range append(rep.Judges, *rep.Panel) {
		a := j.Agreement
		if a.Items == 0 || a.Agree != a.Items || len(j.Disagreements) != 0 {
			t.Errorf("%s: agreement %+v; want every verdict alike", j.Judge, a)
		}
		all := j.OrderCheck[0]
		if all.Items != a.Items || all.Flips != 0 || all.BiasInterval == nil || all.BiasInterval.Low > 0 || all.BiasInterval.High < 0 {
			t.Errorf("%s: order check %+v; want no flip and a bias interval around 0", j.Judge, all)
		}
	}
	types := map[string]bool{}
	for _, bt := range rep.Judges[0].Agreement.ByType {
		types[bt.Type] = true
	}
	if !types[audit.CriterionType] || !types[schema.TypeSuggest] {
		t.Errorf("types %v; want the math types and criterion", types)
	}
	text := string(render(t, rep.WriteText))
	for i, line := range strings.Split(text, "\n") {
		if n := len([]rune(line)); n > audit.Width {
			t.Errorf("text line %d is %d columns wide: %q", i+1, n, line)
		}
	}
}

// TestRejudgeGroupFindsPlantedBias: a judge made lenient toward the
// responses shown late in a group request (the simulator's late_lenience)
// shows a negative position bias whose interval excludes 0, its flips
// toward the response shown later (a judge without it measures none:
// TestRejudgeGroupAgreesAlone).
func TestRejudgeGroupFindsPlantedBias(t *testing.T) {
	t.Parallel()
	dir := groupCorpus(t, 5, 0)
	srv := sim.New(sim.Config{Seed: 5, Judges: map[string]sim.JudgeProfile{"late": {LateLenience: 0.5}}})
	cfg := rejudgeConfig(srv, "", 1, 1)
	cfg.Group = 100
	cfg.Model = "late"
	rep, err := RunGroup(context.Background(), openInput(t, dir), cfg)
	if err != nil {
		t.Fatal(err)
	}
	late := rep.Judges[0].OrderCheck[0]
	t.Logf("late: %d flips of %d, bias %v in %+v", late.Flips, late.Items, *late.Bias, late.BiasInterval)
	if late.Flips == 0 || late.ValidLater <= late.ValidEarlier || late.BiasInterval == nil || late.BiasInterval.High >= 0 {
		t.Errorf("the planted bias was not found: %+v", late)
	}
	if a := rep.Judges[0].Agreement; a.Agree == a.Items {
		t.Errorf("a judge lenient to late responses in groups agrees with itself alone on every verdict: %+v", a)
	}
}

// TestRejudgeGroupNothingToJudge: a corpus without responses (a math
// record's rollouts, a question's answers) says so.
func TestRejudgeGroupNothingToJudge(t *testing.T) {
	t.Parallel()
	recs := reviewtest.GroundedRecords(2)
	for i := range recs {
		for k := range recs[i].Grounded.Questions {
			recs[i].Grounded.Questions[k].Answers = nil
		}
	}
	dir := filepath.Join(t.TempDir(), "run")
	corpusfix.WriteRun(t, dir, recs, 8)
	cfg := rejudgeConfig(sim.New(sim.Config{}), "", 1, 1)
	cfg.Group = 10
	if _, err := RunGroup(context.Background(), openInput(t, dir), cfg); !errors.Is(err, ErrNoGroups) {
		t.Errorf("error %v; want ErrNoGroups", err)
	}
}

func openInput(t *testing.T, dir string) *audit.Input {
	t.Helper()
	in, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
