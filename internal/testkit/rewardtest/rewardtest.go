// Package rewardtest owns the fixtures that the tests of reward, its judge
// and rewardd's service share: rubrics, labels and responses (with the
// simulated judge's markers), a grounded record, and float comparison. It
// imports no package of the reward family, so that each of them can use it
// from its own tests; only tests import it.
package rewardtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// Tol is the relative tolerance of Near.
const Tol = 1e-9

// Near reports whether a and b are equal within Tol, relative to the larger
// of them (absolute below 1).
func Near(a, b float64) bool { return math.Abs(a-b) <= Tol*max(1, math.Abs(a), math.Abs(b)) }

// Item is a rubric item of type typ with the type's polarity.
func Item(id int32, typ string, weight float64) schema.Item {
	return schema.Item{ID: id, Type: typ, Text: "criterion " + typ, Weight: weight, Polarity: schema.PolarityOf(typ)}
}

// Sat is a verdict on item id, satisfied or not at step.
func Sat(id int32, satisfied bool, step int32) schema.Satisfaction {
	return schema.Satisfaction{ID: id, Satisfied: satisfied, Step: step}
}

// SRaRItems: 2 SUGGEST, 1 PITFALL, 1 BONUS, 1 ANSWER, all of weight 1.
func SRaRItems() []schema.Item {
	return []schema.Item{Item(1, schema.TypeSuggest, 1), Item(2, schema.TypeSuggest, 1), Item(3, schema.TypePitfall, 1),
		Item(4, schema.TypeBonus, 1), Item(5, schema.TypeAnswer, 1)}
}

// Label is an SRaR label of "What is 2+3?" (ground truth 5) with items.
func Label(items []schema.Item) *schema.Label {
	return &schema.Label{V: schema.SpecVersion, ID: "p1", Scheme: schema.SchemeSRaR, Style: schema.StyleSRaR,
		Question: "What is 2+3?", GroundTruth: "5", Rubric: items}
}

// DemoLabel is the rubric the handler tests score against: two SUGGESTs, a
// PITFALL, a BONUS and an ANSWER item for "What is 2+3?".
func DemoLabel() schema.Label {
	l := *Label(SRaRItems())
	l.ID, l.DataSource = "sum-2-3", "rubricforge-tests"
	return l
}

// TwoSteps is a correct, formatted two-step response to Label's question.
const TwoSteps = "### Step 1: Add.\n2+3 = 5.\n### Step 2: Check.\n5-3 = 2.\n<answer>5</answer>"

// MarkedResponse is a correct, formatted two-step response whose simulated
// verdicts are: items 1 and 4 satisfied at step 1, item 5 at step 2, the
// others unsatisfied (step -1).
var MarkedResponse = "### Step 1: Add.\n2+3 = 5. " + sim.SatisfiedMarker(1, 4) +
	"\n### Step 2: Check.\n5-3 = 2. " + sim.SatisfiedMarker(5) + "\n<answer>5</answer>"

// BenchRubric is a 10-item SRaR rubric.
func BenchRubric() []schema.Item {
	types := []string{schema.TypeSuggest, schema.TypeSuggest, schema.TypeSuggest, schema.TypeSuggest, schema.TypeSuggest,
		schema.TypePitfall, schema.TypePitfall, schema.TypeBonus, schema.TypeBonus, schema.TypeAnswer}
	items := make([]schema.Item, len(types))
	for j, typ := range types {
		items[j] = Item(int32(j+1), typ, float64(1+j%3))
	}
	return items
}

// BenchResponse is a response of about 1.5 KB in steps steps.
func BenchResponse(rng *rand.Rand, steps int, answer string) string {
	var b strings.Builder
	b.WriteString("Let us work through it.\n")
	for k := 1; k <= steps; k++ {
		fmt.Fprintf(&b, "### Step %d: Part %d\n", k, k)
		for range 6 {
			fmt.Fprintf(&b, "We compute %d + %d = %d, which gives the next quantity. ", rng.IntN(100), rng.IntN(100), rng.IntN(200))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "<answer>%s</answer>", answer)
	return b.String()
}

// BenchGroup is a group of n judged rollouts with random verdicts on items,
// each made by judged from a BenchResponse to Label's question (a third of
// them answer 7, the others 5) and its verdicts.
func BenchGroup[R any](n int, items []schema.Item, judged func(response string, verdicts []schema.Satisfaction) R) []R {
	rng := rand.New(rand.NewPCG(7, 7))
	rs := make([]R, n)
	for i := range rs {
		answer := "5"
		if i%3 == 0 {
			answer = "7"
		}
		steps := 3 + rng.IntN(4)
		response := BenchResponse(rng, steps, answer)
		verdicts := make([]schema.Satisfaction, len(items))
		for j := range items {
			verdicts[j] = Sat(items[j].ID, rng.IntN(2) == 0, int32(rng.IntN(steps+2)-1))
		}
		rs[i] = judged(response, verdicts)
	}
	return rs
}

// WalPassage and WalQuestion are GroundedRecord's passage and first question.
const (
	WalPassage  = "A write-ahead log makes a store durable: each change is appended to the log and fsynced before any data page is touched. After a crash, recovery replays the log from the last checkpoint, redoing committed changes and undoing the rest."
	WalQuestion = "Why must a database make a change durable in its log before it updates the data pages, and how does it recover after a crash?"
)

// GroundedRecord is a passage record with two questions; its criteria
// weigh 4 + 2 + 2 = 8 and 3 + 1 = 4.
func GroundedRecord() schema.Record {
	return schema.Record{
		ID: "0123456789abcdef", Source: "wal-notes", Split: "train", Style: schema.StyleGrounded,
		Rubric: []schema.Item{}, Rollouts: []schema.Rollout{},
		Grounded: &schema.Grounded{
			DocID: "notes/wal.md", PassageID: "notes/wal.md#0", Title: "Write-ahead logging", Passage: WalPassage, DocHash: "00ff00ff00ff00ff",
			Analysis: schema.Analysis{Genre: "tutorial", Contribution: "durability by logging", Concepts: []string{"WAL", "checkpoint"}, Depth: "intermediate", ReasoningMode: "causal"},
			Questions: []schema.GroundedQuestion{
				{Index: 0, Question: WalQuestion, Rationale: "Tests the ordering argument.", Criteria: []schema.Criterion{
					{ID: "order", Weight: 4, Name: "Log first", Description: "The log write is durable before the pages change.", RequiredElements: []string{"fsync"}, ScoringGuide: "Full for order and fsync.", VerificationMethod: "Check the order.", ExpectedKeywords: []string{"log", "before"}},
					{ID: "replay", Weight: 2, Name: "Replay", Description: "Recovery replays from a checkpoint.", ScoringGuide: "Full for replay.", VerificationMethod: "Check recovery.", ExpectedKeywords: []string{"replay", "checkpoint"}},
					{ID: "undo", Weight: 2, Name: "Undo", Description: "Uncommitted changes are undone.", ScoringGuide: "Full for undo.", VerificationMethod: "Check undo.", ExpectedKeywords: []string{"undo"}},
				}},
				{Index: 1, Question: "What does a checkpoint bound during recovery?", Rationale: "Checkpoint role.", Criteria: []schema.Criterion{
					{ID: "c1", Weight: 3, Name: "Bound", Description: "Replay starts at the checkpoint.", ScoringGuide: "g", VerificationMethod: "v", ExpectedKeywords: []string{"checkpoint"}},
					{ID: "c2", Weight: 1, Name: "Why", Description: "Older log records are not needed.", ScoringGuide: "g", VerificationMethod: "v"},
				}},
			},
		},
	}
}

// GroundedLabels are GroundedRecord's questions as checked labels.
func GroundedLabels(t testing.TB) []schema.Label {
	t.Helper()
	rec := GroundedRecord()
	labs := schema.QuestionLabels(&rec)
	for i := range labs {
		if err := labs[i].Check(); err != nil {
			t.Fatal(err)
		}
	}
	return labs
}

// Scored3 is a response the simulated judge scores order 3, replay 2,
// undo 0: 5 of 8.
var Scored3 = "Log first, then pages; replay from the checkpoint. " +
	sim.ScoresMarker(map[string]float64{"order": 3, "replay": 2}, "order", "replay")

// Client is an llm client of the endpoint behind transport (the simulated
// endpoint's, or one wrapping it), asking each request up to attempts times
// with millisecond back-offs, counted by meter.
func Client(t testing.TB, transport http.RoundTripper, attempts int, meter *llm.Meter) *llm.Client {
	t.Helper()
	client, err := llm.NewClient(llm.Endpoint{BaseURL: "http://simulated.invalid/v1"},
		llm.Options{HTTPClient: &http.Client{Transport: transport}, MaxAttempts: attempts, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		nil, meter)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// Prompts are the embedded templates, parsed once per test binary (a
// prompts.Set is safe for concurrent use; parsing them is ~8 ms of CPU
// under the race detector, and the reward family's tests make hundreds of
// judges and servers).
func Prompts(t testing.TB) *prompts.Set {
	t.Helper()
	ps, err := embeddedPrompts()
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

var embeddedPrompts = sync.OnceValues(func() (*prompts.Set, error) { return prompts.Load("") })
