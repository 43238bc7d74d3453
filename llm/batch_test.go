package llm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// offlineBatcher is a Batcher writing its files to an offline directory,
// with a client that defers every request it cannot answer from the
// cache: what --batch-files runs.
func offlineBatcher(t *testing.T, cache *cache.Cache, meter *Meter, dir string) (*Batcher, *Client) {
	t.Helper()
	b, err := NewBatcher(BatchOptions{Dir: filepath.Join(dir, "batches"), OfflineDir: filepath.Join(dir, "files"), PollInterval: time.Hour}, cache, meter)
	if err != nil {
		t.Fatal(err)
	}
	api, err := NewBatchAPI(Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Endpoint{BaseURL: "http://127.0.0.1:1/v1"}, Options{Defer: b.Deferrer(api)}, cache, meter)
	if err != nil {
		t.Fatal(err)
	}
	b.Start(context.Background())
	return b, c
}

// answerOffline writes local's output file, answering each input line
// with answer(custom id, line number) (a whole output line, or "" to leave
// the row out).
func answerOffline(t *testing.T, dir, local string, answer func(customID string, i int) string) {
	t.Helper()
	in, err := os.Open(filepath.Join(dir, "files", local+".input.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out strings.Builder
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		var l batchInputLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if a := answer(l.CustomID, i); a != "" {
			out.WriteString(a + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "files", local+".output.jsonl"), []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func outputLine(customID string, status int, body string) string {
	return fmt.Sprintf(`{"id":"r","custom_id":%q,"response":{"status_code":%d,"request_id":"x","body":%s},"error":null}`, customID, status, body)
}

// TestBatchRowOutcomes: what a batch says of each row decides what the
// next ask of the request gets: an answer from the cache (charged once, at
// the batch rate), a permanent failure for a 4xx or an answer that is not
// a chat completion, another batch for a 5xx or a row left out, until
// MaxRowAttempts batches failed it.
func TestBatchRowOutcomes(t *testing.T) {
	dir := t.TempDir()
	cache := openTestCache(t)
	meter := NewMeter(map[string]Price{"m": {PromptPerMTok: 1e6, CompletionPerMTok: 1e6}}, Budget{})
	b, c := offlineBatcher(t, cache, meter, dir)
	defer b.Close()

	reqs := make([]Request, 5)
	for i := range reqs {
		reqs[i] = simpleRequest(fmt.Sprintf("question %d", i))
	}
	ask := func(i int) error { _, err := c.Chat(context.Background(), reqs[i]); return err }
	for i := range reqs {
		if err := ask(i); ClassOf(err) != ClassDeferred || !errors.Is(err, ErrDeferred) {
			t.Fatalf("request %d: %v, want deferred", i, err)
		}
	}
	if err := ask(0); ClassOf(err) != ClassDeferred {
		t.Fatalf("asked again: %v", err)
	}
	if err := b.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	off := b.Offline()
	if len(off) != 1 || off[0].Rows != len(reqs) {
		t.Fatalf("offline batches %+v: want one of %d rows (a request asked twice is one row)", off, len(reqs))
	}
	outcome := []string{
		outputLine("", 200, string(okBody(1))), // filled below with its custom id
		outputLine("", 400, `{"error":{"message":"context length exceeded"}}`),
		outputLine("", 500, `{"error":{"message":"server busy"}}`),
		outputLine("", 200, `{"not":"a completion"}`),
		"", // left out
	}
	answerOffline(t, dir, off[0].Local, func(id string, i int) string {
		return strings.Replace(outcome[i], `"custom_id":""`, fmt.Sprintf("%q:%q", "custom_id", id), 1)
	})
	b.importOffline()

	resp, err := c.Chat(context.Background(), reqs[0])
	if err != nil || !resp.Cached || resp.Choices[0].Content != "answer 0" {
		t.Fatalf("answered row: %+v, %v", resp, err)
	}
	st := meter.Snapshot().Stages["rollout"]
	if st.BatchAnswers != 1 || st.Requests != 1 || st.CostUSD != 7.5 { // (10+5 tokens) × $1 each × the batch rate ½
		t.Errorf("meter %+v: want one batch answer costing $7.50", st)
	}
	if err := ask(1); ClassOf(err) != ClassPermanent || !strings.Contains(err.Error(), "context length") {
		t.Errorf("400 row: %v, want a permanent failure naming the reason", err)
	}
	if err := ask(3); ClassOf(err) != ClassPermanent || !strings.Contains(err.Error(), "not a chat completion") {
		t.Errorf("malformed row: %v, want a permanent failure", err)
	}
	for _, i := range []int{2, 4} {
		if err := ask(i); ClassOf(err) != ClassDeferred {
			t.Errorf("row %d (500 or left out): %v, want it in another batch", i, err)
		}
	}
	// Two more batches fail the 500 row: then its asker gets the failure.
	for round := 2; round <= 3; round++ {
		if err := b.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		off := b.Offline()
		if want := 4 - round; len(off) != 1 || off[0].Rows != want { // the left-out row is answered in round 2
			t.Fatalf("round %d: %+v, want one file of the %d unanswered rows", round, off, want)
		}
		answerOffline(t, dir, off[0].Local, func(id string, i int) string {
			if id == IdentityOf(reqs[4]).String() {
				return outputLine(id, 200, string(okBody(1)))
			}
			return outputLine(id, 503, `{"error":{"message":"overloaded"}}`)
		})
		b.importOffline()
		err := ask(2)
		if round < 3 && ClassOf(err) != ClassDeferred {
			t.Fatalf("round %d: %v, want another batch", round, err)
		}
		if round == 3 && (ClassOf(err) != ClassRetryable || !strings.Contains(err.Error(), "3 batch")) {
			t.Fatalf("after 3 failed batches: %v, want a retryable failure saying so", err)
		}
		if round == 2 {
			if _, err := c.Chat(context.Background(), reqs[4]); err != nil {
				t.Fatalf("left-out row answered by the next batch: %v", err)
			}
		}
	}

	// A new Batcher over the same journal remembers the failures.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, c2 := offlineBatcher(t, cache, meter, dir)
	defer b2.Close()
	if _, err := c2.Chat(context.Background(), reqs[1]); ClassOf(err) != ClassPermanent {
		t.Errorf("after a restart the 400 row is %v, want still permanent", err)
	}
}

// TestBatchSpendSurvivesReopenAndCompaction: an answer paid at the batch
// rate stays priced at it when the meter is restored from the cache, after
// a reopen from the index file and after compaction.
func TestBatchSpendSurvivesReopenAndCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	online, batch := simpleRequest("online"), simpleRequest("batch")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Put(IdentityOf(online), okBody(1), cache.Usage{Stage: "rollout", Model: "m", PromptTokens: 100, CompletionTokens: 100}))
	must(c.PutMany([]cache.Entry{{ID: IdentityOf(batch), Value: okBody(1), Usage: cache.Usage{Stage: "rollout", Model: "m", PromptTokens: 100, CompletionTokens: 100, Batch: true}}}))
	prices := map[string]Price{"m": {PromptPerMTok: 1e4, CompletionPerMTok: 1e4, BatchRate: 0.4}}
	cost := func(c *cache.Cache) float64 {
		m := NewMeter(prices, Budget{})
		spent, _ := c.Spent()
		m.RestoreSpent(spent)
		return math.Round(m.Spent()*1e9) / 1e9
	}
	want := 2.0 + 2.0*0.4 // 200 tokens at $0.01 each online, and at 40% in the batch
	if got := cost(c); got != want {
		t.Fatalf("spent $%v, want $%v", got, want)
	}
	must(c.Close())
	if c, err = cache.Open(path); err != nil {
		t.Fatal(err)
	}
	if !c.Stats().IndexLoaded {
		t.Fatal("the reopen did not read the index file")
	}
	if got := cost(c); got != want {
		t.Errorf("after a reopen from the index: $%v, want $%v", got, want)
	}
	must(c.Put(IdentityOf(batch), okBody(1), cache.Usage{Stage: "rollout", Model: "m", PromptTokens: 1, CompletionTokens: 1})) // the batch entry is now dead
	want += 0.02
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	if got := cost(c); got != want {
		t.Errorf("after compaction: $%v, want $%v", got, want)
	}
	must(c.Close())
	if c, err = cache.Open(path); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := cost(c); got != want {
		t.Errorf("after compaction and a reopen: $%v, want $%v", got, want)
	}
}

// killedAfterUpload leaves in dir what a run killed mid-submit leaves: one
// request deferred, its file sealed and uploaded to the simulated endpoint
// at url, and the journal saying "uploaded". It returns the request, the
// uploaded file's state and the batch API.
func killedAfterUpload(t *testing.T, url string, opts BatchOptions, cache *cache.Cache, meter *Meter) (Request, *BatchState, *BatchAPI) {
	t.Helper()
	api, err := NewBatchAPI(Endpoint{BaseURL: url}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatcher(opts, cache, meter)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Endpoint{BaseURL: url}, Options{Defer: b.Deferrer(api)}, cache, meter)
	if err != nil {
		t.Fatal(err)
	}
	// A rollout as the simulator recognizes it (its problem has no known
	// answer, so the rollout is wrong; that does not matter here).
	req := Request{Stage: "rollout", Model: "simulated", Messages: []Message{{Role: "user",
		Content: "Solve step by step, each step as ### Step N:, final answer in <answer></answer>.\n<problem>What is 2+2?</problem>"}}}
	if _, err := c.Chat(context.Background(), req); ClassOf(err) != ClassDeferred {
		t.Fatalf("%v, want deferred", err)
	}
	b.mu.Lock()
	for _, bl := range b.building {
		if err := b.sealLocked(bl); err != nil {
			t.Fatal(err)
		}
	}
	s := b.states[b.queue[0]]
	b.mu.Unlock()
	if s.FileID, err = api.UploadFile(context.Background(), b.path(s.Local, "input.jsonl")); err != nil {
		t.Fatal(err)
	}
	s.Phase = PhaseUploaded
	if err := b.jr.append(s); err != nil {
		t.Fatal(err)
	}
	if err := b.jr.close(); err != nil { // killed: nothing else is written
		t.Fatal(err)
	}
	return req, s, api
}

// TestBatchFoundAfterKillBeforeRecorded: a run killed after creating a
// batch but before recording its id finds it by its input file at the
// next start instead of creating it again.
func TestBatchFoundAfterKillBeforeRecorded(t *testing.T) {
	srv, url, stop, err := sim.Start(sim.Config{BatchTurnaround: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	cache := openTestCache(t)
	meter := NewMeter(nil, Budget{})
	opts := BatchOptions{Dir: t.TempDir(), PollInterval: 10 * time.Millisecond}
	req, s, api := killedAfterUpload(t, url, opts, cache, meter)
	// ... after the batch was created at the provider.
	if _, err := api.CreateBatch(context.Background(), s.FileID, "24h", nil, time.Second); err != nil {
		t.Fatal(err)
	}

	b2, err := NewBatcher(opts, cache, meter)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := NewClient(Endpoint{BaseURL: url}, Options{Defer: b2.Deferrer(api)}, cache, meter)
	if err != nil {
		t.Fatal(err)
	}
	b2.Start(context.Background())
	defer b2.Close()
	if err := b2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := b2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Chat(context.Background(), req); err != nil {
		t.Fatalf("after the resume: %v", err)
	}
	if st := srv.BatchStats(); st.BatchesCreated != 1 || st.RequestsRepeated != 0 {
		t.Errorf("simulator: %+v; want the one batch, found again", st)
	}
}

// TestBatchJournalTornLine: a kill mid-append leaves a last line without
// its newline; it is ignored, and a damaged line elsewhere is an error
// naming the line.
func TestBatchJournalTornLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, BatchJournal)
	good := `{"local":"b000001","phase":"submitted","rows":3,"batch_id":"batch_1"}` + "\n"
	if err := os.WriteFile(path, []byte(good+`{"local":"b000001","phase":"ingest`), 0o644); err != nil {
		t.Fatal(err)
	}
	states, err := ReadBatchStates(dir)
	if err != nil || len(states) != 1 || states[0].Phase != PhaseSubmitted {
		t.Fatalf("%+v, %v: want the one complete state", states, err)
	}
	if err := os.WriteFile(path, []byte("not json\n"+good), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBatchStates(dir); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("damaged journal: %v, want an error naming line 1", err)
	}
}

// TestBatchRowAnsweredMeanwhile: a request whose answer a batch put into
// the cache between the caller's cache miss and the Deferrer is read from
// the cache, not written into another batch (that paid for it twice).
func TestBatchRowAnsweredMeanwhile(t *testing.T) {
	dir := t.TempDir()
	responses := openTestCache(t)
	b, c := offlineBatcher(t, responses, NewMeter(nil, Budget{}), dir)
	defer b.Close()
	req := simpleRequest("late")
	id := IdentityOf(req)
	if err := responses.Put(id, okBody(1), cache.Usage{Stage: "rollout", Model: "m", Batch: true}); err != nil {
		t.Fatal(err)
	}
	err := b.deferRequest(context.Background(), nil, DeferredRequest{Stage: "rollout", Model: "m", ID: id, N: 1, Body: []byte(`{}`)})
	if !errors.Is(err, errAnsweredMeanwhile) {
		t.Fatalf("%v, want the cache to be read again", err)
	}
	if len(b.building) != 0 || len(b.open) != 0 {
		t.Fatalf("a row was written for an answered request: %d files, %d rows open", len(b.building), len(b.open))
	}
	if resp, err := c.Chat(context.Background(), req); err != nil || !resp.Cached {
		t.Fatalf("%+v, %v", resp, err)
	}
}

// TestBatchCancelRequestStopsACreate: a file uploaded but not yet made a
// batch when distill batches cancel asks the run to stop is dropped, not
// created: a batch made after the cancellation would escape it.
func TestBatchCancelRequestStopsACreate(t *testing.T) {
	srv, url, stop, err := sim.Start(sim.Config{BatchTurnaround: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	cache := openTestCache(t)
	opts := BatchOptions{Dir: dir, PollInterval: 10 * time.Millisecond}
	_, _, api := killedAfterUpload(t, url, opts, cache, NewMeter(nil, Budget{}))
	if err := os.WriteFile(filepath.Join(dir, BatchCancelFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	b2, err := NewBatcher(opts, cache, NewMeter(nil, Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	b2.Deferrer(api)
	b2.Start(context.Background())
	defer b2.Close()
	if err := b2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := b2.States()[0]; got.Phase != PhaseDropped || b2.Held() == "" {
		t.Errorf("after the cancel request: %+v, held %q; want the file dropped and new batches held", got, b2.Held())
	}
	if n := srv.BatchStats().BatchesCreated; n != 0 {
		t.Errorf("%d batches created after the cancel request", n)
	}
	if _, err := os.Stat(filepath.Join(dir, BatchCancelFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cancel request is still there (%v): the run after this one would hold back too", err)
	}
}
