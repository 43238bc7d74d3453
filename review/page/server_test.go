package page

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// newPage serves a demo-like run; with hold, a process holds the run's
// LOCK (a distill run writing it) while the page reads it.
func newPage(t *testing.T, token string, hold bool) (*Server, *review.Log) {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	if err := reviewtest.DemoRun(run, 3); err != nil {
		t.Fatal(err)
	}
	if hold {
		r, err := corpus.Open(run, corpus.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
	}
	in, err := audit.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	c, err := review.Load(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	log, err := review.OpenLog(review.LogPath(run, "alice"), "alice", c.Fingerprint, run, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	s, err := New(Options{Corpus: c, Log: log, Token: token, Loopback: token == ""})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

func do(s *Server, method, target, body string, header ...string) (int, string) {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host = "127.0.0.1:8765"
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	out, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(out)
}

// TestRunningCorpusIsASnapshot: a corpus a distill run holds is reviewed
// as it was read, and the page says so.
func TestRunningCorpusIsASnapshot(t *testing.T) {
	for _, hold := range []bool{false, true} {
		s, _ := newPage(t, "", hold)
		code, page := do(s, "GET", "/", "")
		if code != http.StatusOK {
			t.Fatalf("GET / = %d", code)
		}
		if got := strings.Contains(page, `id="snapshot-banner"`); got != hold {
			t.Errorf("run held %v: snapshot banner shown %v", hold, got)
		}
	}
}

var keyOf = regexp.MustCompile(`name="review-key" content="([0-9a-f]+)"`)

// TestDecisionsAreChecked: the API takes a decision only with the page's
// key, within the body bound, and refuses an edit that would make the
// item invalid with a message for the page; what it takes is in the log.
func TestDecisionsAreChecked(t *testing.T) {
	s, log := newPage(t, "", false)
	_, page := do(s, "GET", "/", "")
	key := keyOf.FindStringSubmatch(page)[1]
	tests := []struct {
		name, path, body string
		key              string
		code             int
		says             string
	}{
		{"no key", "/api/item", `{"record":"r00","item":1,"action":"accept"}`, "", 403, "page key"},
		{"accept", "/api/item", `{"record":"r00","item":1,"action":"accept"}`, key, 200, `"ok":true`},
		{"empty text", "/api/item", `{"record":"r00","item":2,"action":"edit","after":{"text":" ","type":"SUGGEST","weight":1}}`, key, 422, "text is blank"},
		{"negative weight", "/api/item", `{"record":"r00","item":2,"action":"edit","after":{"text":"ok","type":"SUGGEST","weight":-2}}`, key, 422, "weight -2: it must be a number above 0"},
		{"no such item", "/api/item", `{"record":"r00","item":9,"action":"accept"}`, key, 422, "no item 9"},
		{"no such record", "/api/item", `{"record":"zz","item":1,"action":"accept"}`, key, 404, `no record \"zz\"`},
		{"unknown field", "/api/item", `{"record":"r00","item":1,"action":"accept","x":1}`, key, 400, "unknown field"},
		{"too large", "/api/item", `{"record":"r00","item":1,"action":"reject","reason":"` + strings.Repeat("x", MaxBody) + `"}`, key, 400, "too large"},
		{"flag", "/api/record", `{"record":"r00","action":"flag"}`, key, 200, `"ok":true`},
		{"undo", "/api/undo", `{}`, key, 200, `"ok":true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := do(s, "POST", tt.path, tt.body, "X-Review-Key", tt.key, "Content-Type", "application/json")
			if code != tt.code || !strings.Contains(out, tt.says) {
				t.Fatalf("%d %s; want %d saying %q", code, out, tt.code, tt.says)
			}
		})
	}
	st := review.Replay("alice", log.Entries())
	if len(log.Entries()) != 3 || st.Flagged["r00"] || st.Items[review.ItemKey{Record: "r00", Item: 1}].Action != review.ActionAccept {
		t.Fatalf("the log holds %+v", log.Entries())
	}
}

func TestAccessBeyondLoopback(t *testing.T) {
	s, _ := newPage(t, "s3cret", false)
	if code, _ := do(s, "GET", "/", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := do(s, "GET", "/?token=wrong", ""); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", code)
	}
	req := httptest.NewRequest("GET", "/?token=s3cret", nil)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusOK || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("with the token: %d, cookies %v", rec.Code, cookies)
	}
	if code, _ := do(s, "GET", "/", "", "Cookie", tokenCookie+"=s3cret"); code != http.StatusOK {
		t.Errorf("with the cookie: %d", code)
	}

	loop, _ := newPage(t, "", false)
	req = httptest.NewRequest("GET", "/", nil)
	req.Host = "rebound.example.com:8765"
	rec = httptest.NewRecorder()
	loop.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("a loopback page answered Host %s with %d", req.Host, rec.Code)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8765": true, "localhost:1": true, "[::1]:80": true, "0.0.0.0:8765": false, ":8765": false, "10.0.0.2:80": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
}
