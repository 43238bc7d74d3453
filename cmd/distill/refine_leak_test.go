package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/discrim"
	"github.com/rubricforge/rubricforge/schema"
)

// promptRecorder passes requests to the simulator and keeps the text of
// every message of those that ask for finer items.
type promptRecorder struct {
	mu      sync.Mutex
	prompts []string
}

// serve starts the recording proxy in front of target (a base URL) and
// returns its base URL and a close that ends it.
func (p *promptRecorder) serve(target string) (string, func(), error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &req) == nil {
			var b strings.Builder
			for _, m := range req.Messages {
				b.WriteString(m.Content)
			}
			if strings.Contains(b.String(), "<saturated_item") {
				p.mu.Lock()
				p.prompts = append(p.prompts, b.String())
				p.mu.Unlock()
			}
		}
		rp.ServeHTTP(w, r)
	}))
	return srv.URL + u.Path, srv.Close, nil
}

// TestRefineDecomposeNeverShowsTheHeldOutHalf: through the HTTP API, no
// request for finer items holds any text of a rollout of the half its
// record's held-out figures are measured on (discrim.Split's held-out
// half); rollouts of the other half are shown.
func TestRefineDecomposeNeverShowsTheHeldOutHalf(t *testing.T) {
	t.Parallel()
	// The decomposition TestRefineDecomposeReplacesSaturatedItems/srar
	// checks too (one in-process refine --decompose, made once).
	d := sharedDecomposition(t)
	src, prompts := d.src, d.prompts
	if len(prompts) == 0 {
		t.Fatal("no request for finer items was sent")
	}
	shownSeen, leaked := 0, 0
	err := corpus.ReadAll(src, func(r *schema.Record) error {
		m := discrim.FromRecord(nil, r)
		if m.Rollouts() == 0 {
			return nil
		}
		fit, held := discrim.Split(m)
		text := map[int32]string{}
		for _, ro := range r.Rollouts {
			text[ro.Index] = ro.Text
		}
		mine := ""
		for _, p := range prompts {
			if strings.Contains(p, r.Problem) {
				mine += p
			}
		}
		for _, pos := range held {
			if s := strings.TrimSpace(text[m.Index[pos]]); len(s) > 40 && strings.Contains(mine, s[:len(s)/2]) {
				leaked++
				t.Errorf("record %s: held-out rollout %d is in a request for finer items", r.ID, m.Index[pos])
			}
		}
		for _, pos := range fit {
			if s := strings.TrimSpace(text[m.Index[pos]]); len(s) > 40 && strings.Contains(mine, s[:len(s)/2]) {
				shownSeen++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if shownSeen == 0 {
		t.Error("no rollout of the fit half was found in the requests either: the test cannot see what is shown")
	}
	t.Logf("%d requests for finer items; %d fit-half rollouts shown, %d held-out ones", len(prompts), shownSeen, leaked)
}
