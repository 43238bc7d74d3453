package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/schema"
)

func simCriteria() []schema.Criterion {
	return []schema.Criterion{
		{ID: "wal-order", Weight: 4, Name: "Ordering", Description: "Log before pages.", RequiredElements: []string{"fsync"},
			ExpectedKeywords: []string{"write-ahead", "log"}, ScoringGuide: "Full for both.", VerificationMethod: "Read it."},
		{ID: "replay", Weight: 2, Name: "Recovery", Description: "Replay from a checkpoint.",
			ExpectedKeywords: []string{"checkpoint", "replay"}, ScoringGuide: "Full for replay.", VerificationMethod: "Read it."},
		{ID: "c3", Weight: 1.5, Name: "Cost", Description: "Names the cost.", ScoringGuide: "g", VerificationMethod: "v"},
	}
}

const simPassage = "A write-ahead log appends and fsyncs each change before the pages change; recovery replays the log from the last checkpoint."

// TestScoreGroundedContract: the simulated judge answers the grounded judge
// prompt with scores keyed by the criterion ids it reads, each within its
// weight, and a total and max_total the strict parser accepts.
func TestScoreGroundedContract(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	ps := loadPrompts(t)
	cs := simCriteria()
	for _, tt := range []struct {
		response string
		want     []float64
	}{
		{"The write-ahead log is fsynced first; on restart we replay it from the checkpoint.", []float64{4, 2, 1}}, // c3 has no keywords: half its weight, 0.75, in half points
		{"A log is written first.", []float64{1.5, 0, 1}},                                                          // one of three keywords of 4: 1.33, in half points
		{"", []float64{0, 0, 0}},
		{"Anything. " + ScoresMarker(map[string]float64{"replay": 1.5, "c3": 1.5}, "replay", "c3"), []float64{0, 1.5, 1.5}},
	} {
		msgs, err := ps.ScoreGroundedMessages(simPassage, "Why log first?", tt.response, cs)
		if err != nil {
			t.Fatal(err)
		}
		if k := Classify(toMessages(msgs)); k != KindScoreGrounded {
			t.Fatalf("classified as %s", k)
		}
		for seed := range int64(10) {
			reply := complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content
			g, err := schema.ParseGroundedScores(reply, cs)
			if err != nil {
				t.Fatalf("response %q: reply does not parse: %v\n%s", tt.response, err, reply)
			}
			for k, w := range tt.want {
				if g.Scores[k] != w {
					t.Errorf("response %q: %s scored %v, want %v", tt.response, cs[k].ID, g.Scores[k], w)
				}
			}
		}
	}
}

// TestScoreGroundedMalformed: a malformed attempt makes a mistake the
// strict parser catches, of several kinds, and a repair is answered well.
func TestScoreGroundedMalformed(t *testing.T) {
	t.Parallel()
	s := New(Config{Faults: Faults{Malformed: 1}})
	ps := loadPrompts(t)
	cs := simCriteria()
	msgs, err := ps.ScoreGroundedMessages(simPassage, "Why log first?", "The write-ahead log comes first.", cs)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for seed := range int64(60) {
		reply := complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content
		_, err := schema.ParseGroundedScores(reply, cs)
		var pe *schema.ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("malformed reply parsed (err %v):\n%s", err, reply)
		}
		kinds[strings.SplitN(pe.Msg, " ", 3)[0]+" "+pe.Field] = true
	}
	if len(kinds) < 4 {
		t.Errorf("malformed replies show only %d kinds of mistake: %v", len(kinds), kinds)
	}
	fixed := New(Config{})
	repair, err := ps.RepairMessages(msgs, "not json", errors.New("no JSON object"))
	if err != nil {
		t.Fatal(err)
	}
	if k := Classify(toMessages(repair)); k != KindScoreGrounded {
		t.Fatalf("repair classified as %s", k)
	}
	reply := complete(t, fixed, seeded(repair, 1, 1)).Choices[0].Message.Content
	if _, err := schema.ParseGroundedScores(reply, cs); err != nil {
		t.Fatalf("repair reply: %v\n%s", err, reply)
	}
}

func TestScoreGroundedJudgeFails(t *testing.T) {
	t.Parallel()
	s := New(Config{})
	msgs, err := loadPrompts(t).ScoreGroundedMessages(simPassage, "Q?", "x "+JudgeFailsMarker, simCriteria())
	if err != nil {
		t.Fatal(err)
	}
	reply := complete(t, s, seeded(msgs, 1, 1)).Choices[0].Message.Content
	if _, err := schema.ParseGroundedScores(reply, simCriteria()); err == nil {
		t.Fatalf("a judge-fails response got a usable reply: %s", reply)
	}
}
