package server

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/reward"
	"github.com/rubricforge/rubricforge/schema"
)

// waitElicited waits for the next elicitation to end; the bound only turns
// a hang into a failure.
func waitElicited(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("no elicitation ended within a minute")
	}
}

// withElicit turns elicitation on: the extractor and the validity judge
// are the harness's simulated endpoint, priced at price USD per million
// tokens, within maxCost. done receives a value after each elicitation.
func withElicit(t testing.TB, price, maxCost float64, done chan<- struct{}) harnessOpt {
	return func(c *Config, sc *sim.Config) {
		sc.InvalidRate = -1 // every elicited criterion valid, whatever its text
		c.Elicit = &ElicitOptions{Every: 1, MaxCost: maxCost, Model: "simulated", ValidityModel: "simulated"}
		c.Elicit.Meter = llm.NewMeter(map[string]llm.Price{"simulated": {PromptPerMTok: price, CompletionPerMTok: price}}, llm.Budget{MaxCostUSD: maxCost})
		c.Elicit.onDone = func() { done <- struct{}{} }
	}
}

// startElicit gives the harness's elicitation its client (over the
// simulated endpoint) and runs its worker until the test ends.
func startElicit(t *testing.T, h *harness) {
	h.srv.elicit.opt.Client = rewardtest.Client(t, h.simulator.Transport(), 2, h.srv.elicit.opt.Meter)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.srv.runElicitor(ctx)
}

// TestElicitation: after a group, its best and worst responses go to the
// extractor; the criteria it proposes that the validity judge finds valid
// become candidates (ids 6 on, logged with their evidence), judged with the
// next groups, and the one whose satisfaction follows correctness over two
// groups (the markers satisfy id 6 in the correct responses) is admitted,
// paid from then on at the next version; a problem at its cap of admitted
// criteria is not elicited again.
func TestElicitation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	set := liveSettings()
	set.AdmitGroups, set.MaxAdmitted, set.RetireSaturated = 2, 1, false
	done := make(chan struct{}, 16)
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "r1", set), withElicit(t, 0, 0, done),
		func(c *Config, sc *sim.Config) { sc.Answers = map[string]string{"What is 2+3?": "5"} })
	startElicit(t, h)
	right, wrong := []int32{5, 6}, []int32{}
	liveGroup(t, h, 1, right, right, wrong, wrong)
	waitElicited(t, done)
	st := rubricStats(t, h)
	var cand *livestate.ItemReport
	for i := range st.Items {
		if st.Items[i].ID == 6 {
			cand = &st.Items[i]
		}
	}
	if cand == nil || cand.State != livestate.StateCandidate || cand.Origin != livestate.OriginElicited || st.Version != 1 {
		t.Fatalf("after the first elicitation: version %d, items %+v; want item 6 a candidate", st.Version, st.Items)
	}
	for _, e := range st.Events {
		if e.Kind == "candidate" && (e.Evidence == nil || e.Evidence.Reason == "" || !strings.Contains(e.Evidence.Better, "<answer>5</answer>") || !strings.Contains(e.Evidence.Worse, "<answer>7</answer>")) {
			t.Errorf("candidate %d's evidence %+v: want the judge's reason and the better and worse responses", e.Item, e.Evidence)
		}
	}
	g2 := liveGroup(t, h, 2, right, right, wrong, wrong)
	for _, r := range g2.Results {
		if slices.ContainsFunc(r.Items, func(v reward.ItemVerdict) bool { return v.ID == 6 }) {
			t.Errorf("the candidate is paid before it is admitted: %+v", r.Items)
		}
	}
	liveGroup(t, h, 3, right, right, wrong, wrong)
	g4 := liveGroup(t, h, 4, right, right, wrong, wrong)
	if v := versions(g4); !slices.Equal(v, []int64{2, 2, 2, 2}) {
		t.Errorf("versions after the admission %v, want 2", v)
	}
	if !slices.ContainsFunc(g4.Results[0].Items, func(v reward.ItemVerdict) bool { return v.ID == 6 && v.Type == schema.TypeProcess }) {
		t.Errorf("the admitted criterion is not paid: %+v", g4.Results[0].Items)
	}
	st = rubricStats(t, h)
	admitted := false
	for _, e := range st.Events {
		if e.Kind == "admit" && e.Item == 6 {
			admitted = e.Evidence != nil && e.Evidence.Corr != nil && *e.Evidence.Corr > 0.2 && e.Evidence.Groups == 2
		}
	}
	if !admitted {
		t.Errorf("events %+v: want item 6 admitted with corr > 0.2 over 2 groups", st.Events)
	}
	if n := h.srv.elicit.runs.Load(); n != 1 {
		t.Errorf("%d elicitations; a problem at its cap of one admitted criterion is not elicited again", n)
	}
	_, metrics := h.do(http.MethodGet, "/metrics", "")
	for _, line := range []string{"rewardd_elicit_runs_total 1", `rewardd_live_items{scheme="srar",state="admitted"} 1`} {
		if !strings.Contains(string(metrics), line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
}

// TestElicitationBudget: elicitation stops once it has spent
// --elicit-max-cost, and a restart finds the spending in the state log.
func TestElicitationBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	done := make(chan struct{}, 16)
	h := newHarness(t, []schema.Label{rewardtest.DemoLabel()}, withLive(t, dir, "r1", liveSettings()), withElicit(t, 1, 1e-6, done),
		func(c *Config, sc *sim.Config) {
			sc.Answers = map[string]string{"What is 2+3?": "5"}
			sc.InvalidRate = 1 // every criterion rejected: no candidate waits, so the problem is due at every group
		})
	startElicit(t, h)
	right, wrong := []int32{5}, []int32{}
	liveGroup(t, h, 1, right, wrong)
	waitElicited(t, done)
	spent := h.srv.cfg.Live.ElicitSpent()
	if spent <= 0 {
		t.Fatalf("spent %v after an elicitation priced at 1 USD per million tokens", spent)
	}
	before := h.simulator.Count()
	liveGroup(t, h, 2, right, wrong)
	if n := h.simulator.Count() - before; n != 2 {
		t.Errorf("%d requests for a group of 2 after the budget was spent: elicitation went on", n)
	}
	if !strings.Contains(h.logs.String(), "elicitation stopped") || !strings.Contains(h.logs.String(), "budget") {
		t.Errorf("no line says elicitation stopped for its budget:\n%s", h.logs.String())
	}
	h.srv.cfg.Live.Close()
	again, err := livestate.Open(dir, livestate.Options{Settings: liveSettings(), Replica: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.ElicitSpent() != spent {
		t.Errorf("spent %v after a restart, %v before", again.ElicitSpent(), spent)
	}
}
