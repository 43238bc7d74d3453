package server

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/rewardtest"
	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// TestByPromptFindsTheRolloutTemplatesProblem: the verl export's prompt is
// the rollout template, which puts the problem between <problem> tags in
// the middle of its instructions; rewardd finds it there, as a trainer
// sends it (chat-templated or not).
func TestByPromptFindsTheRolloutTemplatesProblem(t *testing.T) {
	t.Parallel()
	l := rewardtest.DemoLabel()
	l.Question = "Let x = 3.\nFind x + 2."
	x, _ := NewIndex([]schema.Label{l})
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := set.RolloutMessages(l.Question)
	if err != nil {
		t.Fatal(err)
	}
	user := msgs[len(msgs)-1].Content
	for name, prompt := range map[string]string{
		"the template's text": user,
		"chatml":              "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n",
	} {
		got, ok, err := x.ByPrompt(prompt)
		if err != nil || !ok || got.ID != l.ID {
			t.Errorf("%s: %v %v %v, want %s", name, got, ok, err, l.ID)
		}
	}
}
