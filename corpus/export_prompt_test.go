package corpus

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/prompts"
	"github.com/rubricforge/rubricforge/schema"
)

// promptRecords are records whose rollouts were sampled with the rollout
// template of hash.
func promptRecords(hash string) []schema.Record {
	recs := srarOnly(exportFixture())
	for i := range recs {
		recs[i].Provenance.RolloutTemplate = hash
	}
	return recs
}

// TestVerlPromptCarriesTheRolloutFormat: without --system-prompt or
// --user-template, the verl prompt is the rollout template the corpus's
// rollouts were sampled with (step headers, answer tag), so the policy
// is asked for the format SRaR's format reward checks. Before, the prompt
// was the bare problem and the format reward was always 0.
func TestVerlPromptCarriesTheRolloutFormat(t *testing.T) {
	set, err := prompts.Load("")
	if err != nil {
		t.Fatal(err)
	}
	recs := promptRecords(set.Hash(prompts.Rollout))
	m, err := exportIn(t, recs, quietExportOptions(FormatVerl, "export"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rows := range readRows[VerlRow](t, "export", m) {
		for _, row := range rows {
			n++
			want, _ := set.RolloutMessages(problemOf(recs, row.ExtraInfo.ID))
			if len(row.Prompt) != len(want) || row.Prompt[len(row.Prompt)-1].Content != want[len(want)-1].Content {
				t.Errorf("row %s: prompt %+v, want the rollout template's %+v", row.ExtraInfo.ID, row.Prompt, want)
			}
			user := row.Prompt[len(row.Prompt)-1].Content
			for _, must := range []string{"### Step", "<answer>", problemOf(recs, row.ExtraInfo.ID)} {
				if !strings.Contains(user, must) {
					t.Errorf("row %s: the prompt lacks %q", row.ExtraInfo.ID, must)
				}
			}
			checkNoLeak(t, row, recordOf(recs, row.ExtraInfo.ID))
		}
	}
	if n == 0 {
		t.Fatal("no rows")
	}
}

// TestVerlPromptFromTheRunsOwnTemplate: records sampled with a template this
// build does not have (a run's --prompts-dir) are refused without
// --user-template, and exported with it.
func TestVerlPromptFromTheRunsOwnTemplate(t *testing.T) {
	custom := "=== system ===\nYou solve olympiad problems.\n=== user ===\nSolve, with \"## Step N\" headers, then \\boxed{}.\n\n{{.Problem}}\n"
	tmp := filepath.Join(t.TempDir(), "rollout.tmpl")
	if err := os.WriteFile(tmp, []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := prompts.LoadRollout(tmp)
	if err != nil {
		t.Fatal(err)
	}
	recs := promptRecords(set.Hash(prompts.Rollout))
	_, err = exportIn(t, recs, quietExportOptions(FormatVerl, "export"))
	if err == nil || !strings.Contains(err.Error(), "--user-template") || !strings.Contains(err.Error(), set.Hash(prompts.Rollout)) {
		t.Fatalf("export of records from an unknown rollout template: %v", err)
	}
	opt := quietExportOptions(FormatVerl, "export")
	opt.UserTemplateFile = tmp
	m, err := Export(context.Background(), "run", opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range readRows[VerlRow](t, "export", m) {
		for _, row := range rows {
			want, _ := set.RolloutMessages(problemOf(recs, row.ExtraInfo.ID))
			if len(row.Prompt) != 2 || row.Prompt[0] != (ChatMessage{Role: want[0].Role, Content: want[0].Content}) ||
				row.Prompt[1] != (ChatMessage{Role: want[1].Role, Content: want[1].Content}) {
				t.Errorf("row %s: prompt %+v, want %+v", row.ExtraInfo.ID, row.Prompt, want)
			}
		}
	}
	// --system-prompt alone says otherwise: the system message and the bare problem.
	opt = quietExportOptions(FormatVerl, "export")
	opt.SystemPrompt = "Answer in the format you were taught."
	m, err = Export(context.Background(), "run", opt)
	if err != nil {
		t.Fatal(err)
	}
	for file, rows := range readRows[VerlRow](t, "export", m) {
		for _, row := range rows {
			checkPrompt(t, file, row, recordOf(recs, row.ExtraInfo.ID), opt.SystemPrompt)
		}
	}
}

func recordOf(recs []schema.Record, id string) schema.Record {
	for _, r := range recs {
		if r.ID == id {
			return r
		}
	}
	return schema.Record{}
}

func problemOf(recs []schema.Record, id string) string { return recordOf(recs, id).Problem }

// checkNoLeak: no rubric text, reference, label or answer reaches a prompt.
func checkNoLeak(t *testing.T, row VerlRow, rec schema.Record) {
	t.Helper()
	var b strings.Builder
	for _, msg := range row.Prompt {
		b.WriteString(msg.Content + "\n")
	}
	prompt := b.String()
	for _, it := range rec.Rubric {
		if strings.Contains(prompt, it.Text) {
			t.Errorf("row %s: the prompt holds rubric item %d", rec.ID, it.ID)
		}
	}
	if rec.Reference != nil && *rec.Reference != "" && strings.Contains(prompt, *rec.Reference) {
		t.Errorf("row %s: the prompt holds the reference", rec.ID)
	}
	if !strings.Contains(rec.Problem, rec.Answer) && strings.Contains(prompt, "<answer>"+rec.Answer) {
		t.Errorf("row %s: the prompt holds the answer", rec.ID)
	}
}
