package llm

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestTornJournalIsCutNotGluedTo: a journal whose last line a kill tore
// opens with the torn bytes cut off, so the next state is a line of its
// own: the session after reads every state, and so does distill status.
func TestTornJournalIsCutNotGluedTo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	batches := filepath.Join(dir, "batches")
	if err := os.MkdirAll(batches, 0o755); err != nil {
		t.Fatal(err)
	}
	whole := `{"local":"b000001","endpoint":"http://127.0.0.1:1/v1","model":"m","stages":{"rollout":1},"rows":1,"bytes":10,"est_cost_usd":0,"phase":"ingested","request_counts":{"total":1,"completed":1,"failed":0},"answered":1,"created":"2026-12-01T00:00:00Z","updated":"2026-12-01T00:00:01Z"}` + "\n"
	torn := `{"local":"b000002","endpoint":"http://127.0.0.1:1/v1","model":"m","stag`
	if err := os.WriteFile(filepath.Join(batches, BatchJournal), []byte(whole+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	b, c := offlineBatcher(t, openTestCache(t), NewMeter(nil, Budget{}), dir)
	if _, err := c.Chat(context.Background(), simpleRequest("after the kill")); ClassOf(err) != ClassDeferred {
		t.Fatalf("Chat: %v, want deferred", err)
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	states, err := ReadBatchStates(batches)
	if err != nil {
		t.Fatalf("the session after the torn line: %v", err)
	}
	if len(states) != 2 || states[0].Local != "b000001" || states[1].Local != "b000002" || states[1].Phase != PhaseOffline {
		t.Errorf("states %+v; want b000001 and the new b000002", states)
	}
	again, err := NewBatcher(BatchOptions{Dir: batches, OfflineDir: filepath.Join(dir, "files")}, openTestCache(t), NewMeter(nil, Budget{}))
	if err != nil {
		t.Fatalf("the next session: %v", err)
	}
	again.Close()
}
