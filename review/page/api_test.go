package page

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/reviewtest"
	"github.com/rubricforge/rubricforge/review"
)

// api posts body to path with the page's key and decodes the answer.
func api(t *testing.T, s *Server, key, path, body string) (int, map[string]any) {
	t.Helper()
	code, out := do(s, "POST", path, body, "X-Review-Key", key, "Content-Type", "application/json", "Authorization", "Bearer "+testToken)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s answered %d %q: not JSON", path, code, out)
	}
	return code, m
}

// getView gets /api/view with query q.
func getView(t *testing.T, s *Server, q string) map[string]any {
	t.Helper()
	code, out := do(s, "GET", "/api/view?"+q, "", "Authorization", "Bearer "+testToken)
	var m map[string]any
	if code != http.StatusOK || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("/api/view?%s: %d %s", q, code, out)
	}
	return m
}

func pageKey(t *testing.T, s *Server) string {
	t.Helper()
	_, page := do(s, "GET", "/", "", "Authorization", "Bearer "+testToken)
	m := keyOf.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page holds no key:\n%s", page)
	}
	return m[1]
}

// TestViewIsTheRecordAndItsNeighbours: /api/view gives a record with its
// items and standing decisions, its place in the queue and the records
// before and after it, so that the page updates in place.
func TestViewIsTheRecordAndItsNeighbours(t *testing.T) {
	s, _ := newPage(t, testToken, false)
	v := getView(t, s, "")
	rec := v["record"].(map[string]any)
	if rec["id"] != "r00" || v["pos"].(float64) != 0 || v["queue"].(float64) != 3 || v["next"] != "r02" || v["prev"] != "" {
		t.Fatalf("the first view: record %v, pos %v of %v, next %v, prev %v", rec["id"], v["pos"], v["queue"], v["next"], v["prev"])
	}
	items := rec["items"].([]any)
	if len(items) != 5 || items[0].(map[string]any)["decision"] != nil {
		t.Fatalf("items %v", items)
	}
	v = getView(t, s, "rec=r02")
	if v["prev"] != "r00" || v["pos"].(float64) != 1 {
		t.Fatalf("r02's view: prev %v pos %v", v["prev"], v["pos"])
	}
}

// TestDecisionsAnswerWithTheItem: a decision is answered with the item as
// it now stands and the progress; a decision made on a stale view (another
// tab decided since) is refused with 409 and what stands; a second flag
// with 422, logging nothing.
func TestDecisionsAnswerWithTheItem(t *testing.T) {
	s, log := newPage(t, testToken, false)
	key := pageKey(t, s)
	code, m := api(t, s, key, "/api/item", `{"record":"r00","item":1,"action":"accept","seen":0}`)
	it, _ := m["item"].(map[string]any)
	if code != 200 || it == nil || it["decision"].(map[string]any)["action"] != "accept" || m["progress"].(map[string]any)["reviewed"].(float64) != 1 {
		t.Fatalf("accept: %d %v", code, m)
	}
	code, m = api(t, s, key, "/api/item", `{"record":"r00","item":1,"action":"reject","seen":0}`)
	if code != http.StatusConflict || !strings.Contains(m["error"].(string), "accept stands on item #1 of record r00") {
		t.Fatalf("a reject on a view without the accept: %d %v", code, m)
	}
	api(t, s, key, "/api/record", `{"record":"r00","action":"flag"}`)
	code, m = api(t, s, key, "/api/record", `{"record":"r00","action":"flag"}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(m["error"].(string), "already flagged") {
		t.Fatalf("a second flag: %d %v", code, m)
	}
	if n := len(log.Entries()); n != 2 {
		t.Fatalf("the log holds %d entries; want the accept and one flag", n)
	}
}

// TestUndoNamesTheDecision: an undo names the decision it takes back and
// says what it did; a decision with a later one standing over it is not
// undone.
func TestUndoNamesTheDecision(t *testing.T) {
	s, _ := newPage(t, testToken, false)
	key := pageKey(t, s)
	_, a := api(t, s, key, "/api/item", `{"record":"r00","item":3,"action":"accept"}`)
	api(t, s, key, "/api/item", `{"record":"r00","item":3,"action":"reject","reason":"vague"}`)
	seq := a["entry"].(map[string]any)["seq"].(float64)
	code, m := api(t, s, key, "/api/undo", `{"record":"r00","seq":`+ftoa(seq)+`}`)
	if code != http.StatusConflict || !strings.Contains(m["error"].(string), "a later decision on item #3 of record r00 stands (reject") {
		t.Fatalf("undo under a later decision: %d %v", code, m)
	}
	code, m = api(t, s, key, "/api/undo", `{"record":"r00","seq":`+ftoa(seq+1)+`}`)
	if code != 200 || m["message"] != "Undid the reject of item #3 of record r00" ||
		m["item"].(map[string]any)["decision"].(map[string]any)["action"] != "accept" {
		t.Fatalf("undo of the reject: %d %v", code, m)
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// TestTokenOnLoopbackToo: the page asks for the token on a loopback
// address too: without it another local user cannot read it or decide.
func TestTokenOnLoopbackToo(t *testing.T) {
	s, _ := newPage(t, testToken, false)
	if code, _ := do(s, "GET", "/", ""); code != http.StatusUnauthorized {
		t.Errorf("GET / without the token on loopback: %d", code)
	}
	if code, _ := do(s, "POST", "/api/item", `{}`); code != http.StatusUnauthorized {
		t.Errorf("POST without the token on loopback: %d", code)
	}
	if code, _ := do(s, "GET", "/?token="+testToken, ""); code != http.StatusOK {
		t.Errorf("GET /?token=: %d", code)
	}
	if _, err := New(Options{Corpus: s.opt.Corpus, Logs: s.opt.Logs, Loopback: true}); err == nil {
		t.Error("New made a page without a token")
	}
}

// TestGroundedView: a grounded record's view holds its passage, its
// questions and its criteria keyed by question.
func TestGroundedView(t *testing.T) {
	run := filepath.Join(t.TempDir(), "grounded")
	if err := reviewtest.GroundedRun(run, 2); err != nil {
		t.Fatal(err)
	}
	s := pageOn(t, run)
	v := getView(t, s, "")
	rec := v["record"].(map[string]any)
	items := rec["items"].([]any)
	q := items[3].(map[string]any)
	if rec["passage"] == "" || len(rec["questions"].([]any)) != 2 || len(items) != 6 || q["question"].(float64) != 1 || q["id"].(float64) != 1 {
		t.Fatalf("the grounded view: %v", v)
	}
	key := pageKey(t, s)
	code, m := api(t, s, key, "/api/item", `{"record":"`+rec["id"].(string)+`","question":1,"item":2,"action":"edit","after":{"text":"The answer names the log.","weight":3}}`)
	if code != 200 || m["entry"].(map[string]any)["question"].(float64) != 1 {
		t.Fatalf("an edit of a criterion: %d %v", code, m)
	}
}

// pageOn serves the corpus at run for alice.
func pageOn(t *testing.T, run string) *Server {
	t.Helper()
	c, err := review.Open(t.Context(), []string{run}, review.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var logs []*review.Log
	for _, p := range c.Parts {
		l, err := review.OpenLog(review.LogPath(p.Paths[0], "alice"), "alice", p.Fingerprint, p.Paths[0], time.Now())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		logs = append(logs, l)
	}
	s, err := New(Options{Corpus: c, Logs: logs, Token: testToken, Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
