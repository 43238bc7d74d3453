package workers

import (
	"reflect"

	"github.com/rubricforge/rubricforge/llm"
	"path/filepath"
	"testing"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
	"github.com/rubricforge/rubricforge/pipeline"
)

// TestMergedReportKeepsBatchFigures: workers that sent their requests in
// batches have batch figures in their reports (the batches and how many
// requests they answered); the merged report adds them up instead of
// dropping them.
func TestMergedReportKeepsBatchFigures(t *testing.T) {
	t.Parallel()
	_, j, _ := runtest.BatchSetup(t, 12, sim.Config{}, "rollout", "distill")
	dirs := runWorkers(t, j, filepath.Join(t.TempDir(), "w"), 2)
	var batches, answers int64
	for _, d := range dirs {
		rep, ok, err := pipeline.ReadReport(d)
		if err != nil || !ok || rep.Batches == nil {
			t.Fatalf("worker %s has no batch figures: %v", d, err)
		}
		batches += int64(rep.Batches.Completed)
		answers += rep.LLM.Total.BatchAnswers
	}
	if batches == 0 || answers == 0 {
		t.Fatalf("the workers sent nothing in batches (%d batches, %d answers)", batches, answers)
	}
	rep, err := Merge(t.Context(), dirs, filepath.Join(t.TempDir(), "merged"), MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Batches == nil || int64(rep.Batches.Completed) != batches || rep.LLM.Total.BatchAnswers != answers {
		t.Errorf("the merged report has batches %+v and %d batch answers; the workers' together: %d completed, %d answers",
			rep.Batches, rep.LLM.Total.BatchAnswers, batches, answers)
	}
}

// TestAddBatchesAddsEveryCount: every count of a batch summary is added
// (a count added to llm.BatchSummary later is not dropped by the merge).
func TestAddBatchesAddsEveryCount(t *testing.T) {
	t.Parallel()
	var one llm.BatchSummary
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		if v.Field(i).Kind() == reflect.Int {
			v.Field(i).SetInt(1)
		}
	}
	var sum *llm.BatchSummary
	addBatches(&sum, &one)
	addBatches(&sum, &one)
	s := reflect.ValueOf(sum).Elem()
	for i := range s.NumField() {
		if s.Field(i).Kind() == reflect.Int && s.Field(i).Int() != 2 {
			t.Errorf("%s: %d after adding 1 twice", s.Type().Field(i).Name, s.Field(i).Int())
		}
	}
}
