package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

func TestRolloutContract(t *testing.T) {
	t.Parallel()
	answers := testProblems()
	s := New(Config{Answers: answers, LengthRate: 0.1})
	ps := loadPrompts(t)
	formats := map[string]int{}
	finishes := map[string]int{}
	for problem := range answers {
		msgs, err := ps.RolloutMessages(problem)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range int64(30) {
			resp := complete(t, s, seeded(msgs, seed, 1))
			c := resp.Choices[0]
			finishes[c.FinishReason]++
			if c.Message.Reasoning == "" || c.Message.Role != "assistant" {
				t.Fatalf("message without role or reasoning: %+v", c.Message)
			}
			steps := countSteps(c.Message.Content)
			if !strings.HasPrefix(c.Message.Content, "### Step 1:") {
				t.Fatalf("solution does not start with a step header:\n%s", c.Message.Content)
			}
			switch c.FinishReason {
			case "length":
				if strings.Contains(c.Message.Content, "<answer>") {
					t.Fatalf("truncated solution has an answer:\n%s", c.Message.Content)
				}
				continue
			case "stop":
			default:
				t.Fatalf("finish_reason %q", c.FinishReason)
			}
			if steps < 2 || steps > 5 {
				t.Errorf("%d steps, want 2-5:\n%s", steps, c.Message.Content)
			}
			if _, ok := finalAnswer(c.Message.Content); !ok {
				t.Fatalf("no final answer on the last line:\n%s", c.Message.Content)
			}
			last := c.Message.Content[strings.LastIndex(c.Message.Content, "\n")+1:]
			switch {
			case strings.HasPrefix(last, "<answer>"):
				formats["tag"]++
			case strings.Contains(last, `\boxed{`):
				formats["boxed"]++
			default:
				formats["final answer is"]++
			}
			if resp.Usage.CompletionTokens < 1 || resp.Usage.PromptTokens < 1 ||
				resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
				t.Fatalf("usage %+v", resp.Usage)
			}
			if resp.Model != "sim-test" || resp.Object != "chat.completion" || resp.SystemFingerprint != "simulated-llmtest" {
				t.Fatalf("envelope %+v", resp)
			}
		}
	}
	total := float64(finishes["stop"] + finishes["length"])
	if r := float64(finishes["length"]) / total; r < 0.05 || r > 0.15 {
		t.Errorf("length rate %.3f, want about 0.1", r)
	}
	if r := float64(formats["tag"]) / float64(finishes["stop"]); r < 0.75 || r > 0.93 {
		t.Errorf("answer-tag share %.3f, want about 0.85 (formats %v)", r, formats)
	}
	if formats["boxed"] == 0 || formats["final answer is"] == 0 {
		t.Errorf("formats %v: want every final-answer form", formats)
	}
}

func TestSRaRContract(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	noisy := 0
	for i := range 200 {
		gold := fmt.Sprintf(`\frac{%d}{7}`, i)
		maxItems := 4 + i%6
		msgs, err := ps.DistillSRaRMessages(fmt.Sprintf("Problem %d: find x with 7x = %d.", i, i), gold, []prompts.Solution{
			{Index: 1, Correct: true, Text: "### Step 1: Divide\nx = " + gold + "\n<answer>" + gold + "</answer>"},
			{Index: 2, Correct: false, Text: "### Step 1: Guess\nx = 1\n<answer>1</answer>"},
		}, maxItems)
		if err != nil {
			t.Fatal(err)
		}
		content := complete(t, s, seeded(msgs, 0, 1)).Choices[0].Message.Content
		if strings.Contains(content, "```") || strings.Contains(content, "- <") || strings.Contains(content, "\n\n") ||
			strings.HasPrefix(content, "<SUGGEST>") {
			noisy++
		}
		res, err := schema.ParseSRaR(content, schema.SRaROptions{MaxItems: maxItems})
		if err != nil {
			t.Fatalf("ParseSRaR: %v\n%s", err, content)
		}
		count := map[string]int{}
		for _, it := range res.Items {
			count[it.Type]++
		}
		if count[schema.TypeSuggest] < 1 || count[schema.TypeSuggest] > 6 || count[schema.TypePitfall] > 2 ||
			count[schema.TypeBonus] > 1 || count[schema.TypeAnswer] != 1 || len(res.Items) > maxItems {
			t.Fatalf("item counts %v (max %d):\n%s", count, maxItems, content)
		}
		if maxItems >= 7 && count[schema.TypeSuggest] < 3 {
			t.Fatalf("%d SUGGEST items with room for 7:\n%s", count[schema.TypeSuggest], content)
		}
		answer := res.Items[len(res.Items)-1]
		if answer.Type != schema.TypeAnswer || answer.Text != "The final answer is equivalent to "+gold+"." {
			t.Fatalf("ANSWER item %+v", answer)
		}
	}
	if noisy < 5 || noisy > 40 {
		t.Errorf("%d of 200 rubrics carry format noise, want about 20", noisy)
	}
}

func TestFactualProcessContract(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	for i := range 100 {
		msgs, err := ps.DistillFactualProcessMessages(fmt.Sprintf("Question %d: what is 2 + %d?", i, i), "Add.", fmt.Sprint(2+i))
		if err != nil {
			t.Fatal(err)
		}
		req := seeded(msgs, 0, 1)
		if i%4 == 0 {
			req.ResponseFormat = map[string]string{"type": "json_object"}
		}
		content := complete(t, s, req).Choices[0].Message.Content
		if req.ResponseFormat != nil && !strings.HasPrefix(content, "[") {
			t.Fatalf("JSON mode reply does not start with the array:\n%s", content)
		}
		items, err := schema.ParseFactualProcess(content)
		if err != nil {
			t.Fatalf("ParseFactualProcess: %v\n%s", err, content)
		}
		if len(items) < 3 || len(items) > 8 {
			t.Fatalf("%d items", len(items))
		}
		if items[0].Type != schema.TypeFactual || !strings.Contains(items[0].Text, fmt.Sprint(2+i)) {
			t.Fatalf("first item %+v", items[0])
		}
		for _, it := range items {
			if it.Weight < 1 || it.Weight > 5 {
				t.Fatalf("weight %v", it.Weight)
			}
		}
	}
}

func TestJudgeContracts(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{InvalidRate: 0.2})
	invalid, total := 0, 0
	for i := range 60 {
		problem := fmt.Sprintf("Problem %d: compute %d squared.", i, i)
		var items []schema.Item
		for j := range 1 + i%7 {
			items = append(items, schema.Item{ID: int32(j + 1), Type: schema.ItemTypes[j%len(schema.ItemTypes)],
				Text: fmt.Sprintf("Criterion %d about %d squared.", j, i)})
		}
		msgs, err := ps.JudgeBatchMessages(problem, fmt.Sprint(i*i), items)
		if err != nil {
			t.Fatal(err)
		}
		content := complete(t, s, seeded(msgs, 0, 1)).Choices[0].Message.Content
		batch, err := schema.ParseValidityBatch(content, itemIDs(items))
		if err != nil {
			t.Fatalf("ParseValidityBatch: %v\n%s", err, content)
		}
		for j, it := range items {
			msgs, err := ps.JudgeItemMessages(problem, fmt.Sprint(i*i), it)
			if err != nil {
				t.Fatal(err)
			}
			content := complete(t, s, seeded(msgs, 0, 1)).Choices[0].Message.Content
			v, err := schema.ParseValidity(content)
			if err != nil {
				t.Fatalf("ParseValidity: %v\n%s", err, content)
			}
			if v.Valid != batch[j].Valid || v.Reason == "" {
				t.Fatalf("item %d: single verdict %+v, batch verdict %+v", it.ID, v, batch[j])
			}
			total++
			if !v.Valid {
				invalid++
			}
		}
	}
	if r := float64(invalid) / float64(total); r < 0.1 || r > 0.3 {
		t.Errorf("invalid rate %.3f over %d items, want about 0.2", r, total)
	}
}

func TestSatisfyContract(t *testing.T) {
	t.Parallel()
	ps := loadPrompts(t)
	s := New(Config{})
	items := []schema.Item{
		{ID: 1, Type: schema.TypeSuggest, Text: "Uses C(24,3)."},
		{ID: 2, Type: schema.TypePitfall, Text: "Orders the members."},
		{ID: 3, Type: schema.TypeBonus, Text: "Uses symmetry."},
		{ID: 4, Type: schema.TypeAnswer, Text: "The final answer is equivalent to 2024."},
		{ID: 5, Type: schema.TypeFactual, Text: "States 2024."},
		{ID: 6, Type: schema.TypeProcess, Text: "Computes 24*23*22/6."},
	}
	for steps := range 6 {
		var sol strings.Builder
		for i := range steps {
			fmt.Fprintf(&sol, "### Step %d: Part\nWork.\n\n", i+1)
		}
		sol.WriteString("<answer>2024</answer>")
		msgs, err := ps.SatisfyMessages(sampleProblem, sol.String(), "2024", items)
		if err != nil {
			t.Fatal(err)
		}
		for seed := range int64(10) {
			content := complete(t, s, seeded(msgs, seed, 1)).Choices[0].Message.Content
			sats, err := schema.ParseSatisfaction(content, itemIDs(items), steps)
			if err != nil {
				t.Fatalf("ParseSatisfaction: %v\n%s", err, content)
			}
			for _, v := range sats {
				if v.Step < -1 || int(v.Step) > steps {
					t.Fatalf("item %d: step %d with %d steps", v.ID, v.Step, steps)
				}
			}
		}
	}
}
