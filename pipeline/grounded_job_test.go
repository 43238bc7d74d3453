package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/job"

	"github.com/rubricforge/rubricforge/schema"
)

// TestGroundedJobFile: a `style: grounded` job file with passage settings
// loads, validates, is written back to RUN/job.yaml unchanged in meaning,
// and a wrong grounded setting is named by its field.
func TestGroundedJobFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "job.yaml")
	runtest.WriteFile(t, path, `style: grounded
input: {paths: [docs], fields: {text: body, id: doc_id}}
out: run
rollout: {base_url: "http://127.0.0.1:1/v1", model: m}
grounded: {passage_chars: 4000, questions_per_passage: 3, min_criteria: 6, enrich: false}
`)
	jb, err := job.PrepareJob(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := jb.Grounded
	if jb.Style != schema.StyleGrounded || g.PassageChars != 4000 || g.QuestionsPerPassage != 3 || g.MinCriteria != 6 || g.MaxCriteria != 10 || g.Enrich ||
		jb.Input.Fields.Text != "body" || jb.Input.Paths[0] != filepath.Join(dir, "docs") {
		t.Errorf("loaded %+v, input %+v", g, jb.Input)
	}
	if jb.Split != job.GroundedSplit {
		t.Errorf("a grounded job without split: has split %+v, want 70/15/15", jb.Split)
	}
	b, err := jb.RunDirYAML()
	if err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back.yaml")
	runtest.WriteFile(t, back, string(b))
	again, err := job.LoadJobFile(back)
	if err != nil {
		t.Fatal(err)
	}
	if again.Fingerprint() != jb.Fingerprint() {
		t.Errorf("job.yaml read back has another fingerprint: %v", job.ChangedSettings(&jb, &again))
	}
	other := jb
	other.Grounded.PassageChars = 5000
	if changes := job.ChangedSettings(&jb, &other); len(changes) != 1 || !strings.HasPrefix(changes[0], "grounded.passage_chars: 4000 → 5000") {
		t.Errorf("a changed passage size is described as %q", changes)
	}

	runtest.WriteFile(t, path, "style: grounded\ninput: {paths: [docs]}\nout: run\nrollout: {base_url: \"http://127.0.0.1:1/v1\", model: m}\nsplit: {validation: 0.1}\n")
	if jb, err := job.PrepareJob(path, nil); err != nil || jb.Split != (job.SplitFractions{Validation: 0.1}) {
		t.Errorf("a job file's split is not kept: %+v, %v", jb.Split, err)
	}
	runtest.WriteFile(t, path, "style: grounded\ninput: {paths: [docs]}\nout: run\nrollout: {base_url: \"http://127.0.0.1:1/v1\", model: m}\ngrounded: {passage_chars: 50, min_criteria: 12, max_criteria: 8}\n")
	_, err = job.PrepareJob(path, nil)
	for _, want := range []string{"grounded.passage_chars: 50 is outside", "grounded.min_criteria: min_criteria 12 and max_criteria 8"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
}
