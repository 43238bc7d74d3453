package llm

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// downAfterCreate is a transport that lets one create reach the provider,
// then loses its reply and every later call: a run killed (or cut off)
// between making a batch and recording it.
type downAfterCreate struct {
	next http.RoundTripper
	down atomic.Bool
}

func (t *downAfterCreate) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.down.Load() {
		return nil, errors.New("dial tcp: connection refused (the network is down)")
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/batches") {
		resp.Body.Close()
		t.down.Store(true)
		return nil, errors.New("read: connection reset by peer")
	}
	return resp, err
}

// TestBatchFoundBehindThousandsOfOthers: a batch made but not recorded (the
// reply lost, the session over) is found by the next session however many
// batches the account made since (1,200 here, past the newest 1,000 a
// look used to read), and not made again.
func TestBatchFoundBehindThousandsOfOthers(t *testing.T) {
	t.Parallel()
	srv, url, stop, err := sim.Start(sim.Config{BatchTurnaround: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	opts := BatchOptions{Dir: filepath.Join(dir, "batches"), PollInterval: 10 * time.Millisecond, CreateSettle: time.Hour}
	responses := openTestCache(t)

	// The first session makes the batch and never learns it did.
	lossy := &downAfterCreate{next: http.DefaultTransport}
	api, err := NewBatchAPI(Endpoint{BaseURL: url}, Options{HTTPClient: &http.Client{Transport: lossy}, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBatcher(opts, responses, NewMeter(nil, Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Endpoint{BaseURL: url}, Options{Defer: b.Deferrer(api)}, responses, NewMeter(nil, Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	b.Start(context.Background())
	if _, err := c.Chat(context.Background(), rolloutRequest()); ClassOf(err) != ClassDeferred {
		t.Fatalf("Chat: %v", err)
	}
	b.Flush(context.Background())
	for deadline := time.Now().Add(time.Minute); !lossy.down.Load() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	b.Close()
	if st := srv.BatchStats(); st.BatchesCreated != 1 {
		t.Fatalf("the first session made %d batches, want 1", st.BatchesCreated)
	}
	srv.SeedBatches(1200)

	b2, _, _ := batchSession(t, url, opts, responses)
	defer b2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for b2.Waiting() > 0 && ctx.Err() == nil {
		if err := b2.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st := srv.BatchStats(); st.BatchesCreated != 1201 || st.CustomIDsRepeated != 0 {
		t.Errorf("the provider holds %d batches (1,200 of others) and %d rows answered twice: the batch was made again", st.BatchesCreated, st.CustomIDsRepeated)
	}
	if states := b2.States(); len(states) != 1 || states[0].Phase != PhaseIngested {
		t.Errorf("states %+v; want the one batch, ingested", states)
	}
}
