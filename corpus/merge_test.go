package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordFailuresReadBack: failures recorded in one batch are the run's
// failures after a reopen, and ReadFailures gives the latest line of each
// id, without the lock, skipping a torn last line.
func TestRecordFailuresReadBack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r := openRun(t, dir, Options{})
	if err := r.RecordFailure(Failure{ID: "a", Stage: "rollout", Reason: "first"}); err != nil {
		t.Fatal(err)
	}
	var batch []Failure
	for i := range 5 {
		batch = append(batch, Failure{ID: fmt.Sprintf("id%d", i), Stage: "distill", Reason: "unparseable"})
	}
	batch = append(batch, Failure{ID: "a", Stage: "judge", Reason: "second"})
	if err := r.RecordFailures(batch); err != nil {
		t.Fatal(err)
	}
	if st, ok := r.Failed("a"); !ok || st.Stage != "judge" {
		t.Errorf("a's failure is %+v, want its latest, at judge", st)
	}
	fs, err := ReadFailures(dir) // while the run holds its lock
	if err != nil || len(fs) != 6 {
		t.Fatalf("ReadFailures: %d failures, %v; want 6", len(fs), err)
	}
	for _, f := range fs {
		if f.ID == "a" && f.Reason != "second" {
			t.Errorf("ReadFailures gives a's first line, not its latest")
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, FailuresName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"torn","sta`)
	f.Close()
	fs, err = ReadFailures(dir)
	if err != nil || len(fs) != 6 {
		t.Errorf("with a torn last line: %d failures, %v; want 6", len(fs), err)
	}
	r = openRun(t, dir, Options{})
	defer r.Close()
	got := r.Failures()
	if len(got) != 6 || got["id3"].Reason != "unparseable" || !strings.Contains(got["a"].Reason, "second") {
		t.Errorf("after a reopen: %v", got)
	}
}
