package sim

import (
	"errors"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

const sampleProblem = "A club has 24 members. In how many ways can a committee of 3 members be chosen?"

// renderedPrompts renders every template the simulator must recognize.
func renderedPrompts(t testing.TB) map[Kind][]prompts.Message {
	t.Helper()
	ps := loadPrompts(t)
	items := []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "Uses the combination formula C(24, 3)."},
		{ID: 2, Type: schema.TypePitfall, Text: "Counts ordered selections instead of committees."},
		{ID: 3, Type: schema.TypeAnswer, Text: "The final answer is equivalent to 2024."},
	}
	sol := "### Step 1: Count\nC(24,3) = 2024.\n\n### Step 2: Done\nSo 2024.\n<answer>2024</answer>"
	out := map[Kind][]prompts.Message{}
	var err error
	check := func(k Kind, msgs []prompts.Message, e error) {
		if e != nil {
			err = errors.Join(err, e)
		}
		out[k] = msgs
	}
	m, e := ps.RolloutMessages(sampleProblem)
	check(KindRollout, m, e)
	m, e = ps.DistillSRaRMessages(sampleProblem, "2024", []prompts.Solution{
		{Index: 1, Correct: true, Text: sol},
		{Index: 2, Correct: false, Text: "### Step 1: Order\n24*23*22 = 12144.\n<answer>12144</answer>"},
	}, 8)
	check(KindDistillSRaR, m, e)
	m, e = ps.DistillFactualProcessMessages(sampleProblem, "Use C(24,3).", "2024")
	check(KindDistillFactualProcess, m, e)
	m, e = ps.JudgeItemMessages(sampleProblem, "2024", items[0])
	check(KindJudgeItem, m, e)
	m, e = ps.JudgeBatchMessages(sampleProblem, "2024", items)
	check(KindJudgeBatch, m, e)
	m, e = ps.SatisfyMessages(sampleProblem, sol, "2024", items)
	check(KindSatisfy, m, e)
	if err != nil {
		t.Fatalf("rendering prompts: %v", err)
	}
	return out
}

func TestClassify(t *testing.T) {
	t.Parallel()
	rendered := renderedPrompts(t)
	ps := loadPrompts(t)
	tests := []struct {
		name string
		msgs []Message
		want Kind
	}{
		{"rollout", toMessages(rendered[KindRollout]), KindRollout},
		{"distill_srar", toMessages(rendered[KindDistillSRaR]), KindDistillSRaR},
		{"distill_factual_process", toMessages(rendered[KindDistillFactualProcess]), KindDistillFactualProcess},
		{"judge_item", toMessages(rendered[KindJudgeItem]), KindJudgeItem},
		{"judge_batch", toMessages(rendered[KindJudgeBatch]), KindJudgeBatch},
		{"satisfy", toMessages(rendered[KindSatisfy]), KindSatisfy},
		{"no messages", nil, KindUnknown},
		{"a poem", []Message{{Role: "user", Content: "Write a poem about the sea."}}, KindUnknown},
		{"problem without format", []Message{{Role: "user", Content: "<problem>1+1</problem>"}}, KindUnknown},
		{"ends with assistant", append(toMessages(rendered[KindRollout]), Message{Role: "assistant", Content: "hi"}), KindUnknown},
		{"system only", []Message{{Role: "system", Content: "<<SUGGEST>> <<ANSWER>>"}}, KindUnknown},
	}
	for _, k := range []Kind{KindDistillSRaR, KindJudgeBatch, KindSatisfy} {
		repair, err := ps.RepairMessages(rendered[k], "not a rubric", errors.New("no ANSWER line"))
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			name string
			msgs []Message
			want Kind
		}{"repair of " + string(k), toMessages(repair), k})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.msgs); got != tt.want {
				t.Errorf("Classify = %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzClassify(f *testing.F) {
	for _, msgs := range renderedPrompts(f) {
		for _, m := range msgs {
			f.Add(m.Role, m.Content)
		}
	}
	f.Add("user", `<item id="x" type="SUGGEST">`)
	f.Fuzz(func(t *testing.T, role, content string) {
		s := New(Config{})
		msgs := []Message{{Role: role, Content: content}}
		kind, prompt, _ := classify(msgs)
		if kind == KindUnknown {
			return
		}
		// A recognized prompt of any shape must produce a response.
		resp := s.respond(&chatRequest{Model: "m"}, msgs, kind, prompt, 1, 2, false, 1)
		if len(resp.Choices) != 2 {
			t.Fatalf("%d choices", len(resp.Choices))
		}
	})
}
