package llm

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// loseFirstCreate is a transport that lets the first POST /batches reach
// the provider and then loses its reply the way lose says: what a proxy's
// 502 or 504, a reset or a cut body does to a batch the provider created.
type loseFirstCreate struct {
	next http.RoundTripper
	lose func(*http.Response) (*http.Response, error)
	mu   sync.Mutex
	done bool
}

func (t *loseFirstCreate) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/batches") {
		return resp, err
	}
	t.mu.Lock()
	first := !t.done
	t.done = true
	t.mu.Unlock()
	if !first {
		return resp, nil
	}
	return t.lose(resp)
}

// cutReader gives part of a body, then fails as a connection cut mid-body.
type cutReader struct{ r io.Reader }

func (c *cutReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// TestBatchCreateRetryFindsTheBatchTheLostReplyMade: when the provider
// created a batch but its reply was lost, the retry finds that batch by
// its input file instead of creating a second one (billed, never
// journaled, never cancelled).
func TestBatchCreateRetryFindsTheBatchTheLostReplyMade(t *testing.T) {
	status := func(code int) func(*http.Response) (*http.Response, error) {
		return func(r *http.Response) (*http.Response, error) {
			r.Body.Close()
			return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{},
				Body: io.NopCloser(strings.NewReader("<html>bad gateway</html>")), Request: r.Request}, nil
		}
	}
	cases := []struct {
		name string
		lose func(*http.Response) (*http.Response, error)
	}{
		{"proxy 502", status(http.StatusBadGateway)},
		{"proxy 504", status(http.StatusGatewayTimeout)},
		{"connection reset", func(r *http.Response) (*http.Response, error) {
			r.Body.Close()
			return nil, errors.New("read tcp 127.0.0.1:1: connection reset by peer")
		}},
		{"cut body", func(r *http.Response) (*http.Response, error) {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			r.Body = io.NopCloser(&cutReader{bytes.NewReader(b[:len(b)/2])})
			return r, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, url, stop, err := sim.Start(sim.Config{BatchTurnaround: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			plain, err := NewBatchAPI(Endpoint{BaseURL: url}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			input := filepath.Join(t.TempDir(), "in.jsonl")
			line := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"simulated","messages":[{"role":"user","content":"hi"}]}}` + "\n"
			if err := os.WriteFile(input, []byte(line), 0o644); err != nil {
				t.Fatal(err)
			}
			fileID, err := plain.UploadFile(context.Background(), input)
			if err != nil {
				t.Fatal(err)
			}
			lossy, err := NewBatchAPI(Endpoint{BaseURL: url}, Options{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
				HTTPClient: &http.Client{Transport: &loseFirstCreate{next: http.DefaultTransport, lose: tc.lose}}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := lossy.CreateBatch(context.Background(), fileID, "24h", nil, time.Second)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if n := srv.BatchStats().BatchesCreated; n != 1 {
				t.Errorf("%d batches at the endpoint for one input file, want 1", n)
			}
			if got.InputFileID != fileID || got.ID == "" {
				t.Errorf("create answered %+v, want the batch of file %s", got, fileID)
			}
		})
	}
}
