package llm

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rubricforge/rubricforge/llm/cache"
)

// replies serves the given contents in turn (the last one repeats), each
// with finish reason "stop" unless the content ends in "~", which is cut
// off ("length").
func replies(contents ...string) func(w http.ResponseWriter, _ *http.Request, n int) {
	return func(w http.ResponseWriter, _ *http.Request, n int) {
		c := contents[min(n, len(contents))-1]
		finish := "stop"
		if strings.HasSuffix(c, "~") {
			finish = "length"
		}
		writeJSON(w, 200, completionBody(10, 5, Choice{Content: c, FinishReason: finish}))
	}
}

// wantOK parses replies of the form "ok ...".
func wantOK(reply string) error {
	if !strings.HasPrefix(reply, "ok") {
		return fmt.Errorf("reply %q does not start with ok", reply)
	}
	return nil
}

// repairTurn appends the failed reply and the parser's complaint.
func repairTurn(sent []Message, reply string, perr error) ([]Message, error) {
	return append(append([]Message(nil), sent...), Message{Role: "assistant", Content: reply}, Message{Role: "user", Content: "fix this: " + perr.Error()}), nil
}

func TestChatParsed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replies  []string
		repairs  int
		wantErr  string // "" ok
		attempts int    // replies received
		sent     int
	}{
		{"parses at once", []string{"ok 1"}, 2, "", 1, 1},
		{"one repair", []string{"bad", "ok 2"}, 2, "", 2, 2},
		{"cut off, then whole", []string{"ok but cut~", "ok 2"}, 1, "", 2, 2},
		{"never parses", []string{"bad", "worse", "worst"}, 2, "does not start with ok", 3, 3},
		{"cut off to the end", []string{"ok~"}, 1, "cut off by the token limit", 2, 2},
		{"no repairs allowed", []string{"bad", "ok"}, 0, "does not start with ok", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, replies(tc.replies...))
			meter := NewMeter(nil, Budget{})
			c := newTestClient(t, srv.endpoint(), fastOptions(), nil, meter)
			var seen []string
			var parsed string
			err := c.ChatParsed(t.Context(), simpleRequest("q"), Ask{
				What: "rubric", Repairs: tc.repairs, Repair: repairTurn,
				Parse:      func(r string) error { parsed = r; return wantOK(r) },
				OnResponse: func(r *Response) { seen = append(seen, r.Choices[0].Content) },
			})
			if got := len(seen); got != tc.attempts || srv.hits.Load() != int64(tc.sent) {
				t.Errorf("OnResponse saw %d replies (%v), %d sent; want %d and %d", got, seen, srv.hits.Load(), tc.attempts, tc.sent)
			}
			if repairs := meter.Snapshot().Stages["rollout"].Repairs; repairs != int64(tc.attempts-1) {
				t.Errorf("%d repairs counted, want %d", repairs, tc.attempts-1)
			}
			if tc.wantErr == "" {
				if err != nil || parsed != seen[len(seen)-1] {
					t.Fatalf("err %v, parsed %q", err, parsed)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Attempts != tc.attempts || pe.What != "rubric" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v; want a ParseError after %d attempts saying %q", err, tc.attempts, tc.wantErr)
			}
		})
	}
}

// TestChatParsedRepairTurns: a repair turn shows the model its reply and the
// parser's error, and is a request of its own.
func TestChatParsedRepairTurns(t *testing.T) {
	srv := newServer(t, replies("bad", "ok"))
	c := newTestClient(t, srv.endpoint(), fastOptions(), nil, nil)
	if err := c.ChatParsed(t.Context(), simpleRequest("q"), Ask{What: "rubric", Repairs: 1, Parse: wantOK, Repair: repairTurn}); err != nil {
		t.Fatal(err)
	}
	msgs := srv.lastBody()["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("repair turn sent %d messages: %v", len(msgs), msgs)
	}
	reply, complaint := msgs[1].(map[string]any), msgs[2].(map[string]any)
	if reply["role"] != "assistant" || reply["content"] != "bad" || !strings.Contains(complaint["content"].(string), "does not start with ok") {
		t.Errorf("repair turn: %v", msgs)
	}
}

func TestChatParsedErrors(t *testing.T) {
	t.Run("a repair that cannot be built", func(t *testing.T) {
		srv := newServer(t, replies("bad"))
		c := newTestClient(t, srv.endpoint(), fastOptions(), nil, nil)
		err := c.ChatParsed(t.Context(), simpleRequest("q"), Ask{What: "verdicts", Repairs: 1, Parse: wantOK,
			Repair: func([]Message, string, error) ([]Message, error) { return nil, errors.New("template broken") }})
		if err == nil || !strings.Contains(err.Error(), "repair turn for the verdicts: template broken") {
			t.Errorf("%v", err)
		}
	})
	t.Run("chat errors pass through", func(t *testing.T) {
		srv := newServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
			writeJSON(w, 401, []byte(`{"error":{"message":"no"}}`))
		})
		c := newTestClient(t, srv.endpoint(), fastOptions(), nil, nil)
		err := c.ChatParsed(t.Context(), simpleRequest("q"), Ask{What: "rubric", Repairs: 1, Parse: wantOK, Repair: repairTurn})
		if ClassOf(err) != ClassFatal || errors.As(err, new(*ParseError)) {
			t.Errorf("%v", err)
		}
	})
}

// TestUnparsableRepliesAreNotReplayed: when no reply of an exchange parsed,
// asking again (--retry-failed) sends fresh requests, also after a reopen;
// when the exchange ended in a reply that parsed, asking again (a resume)
// sends nothing, even for the first reply that did not parse.
func TestUnparsableRepliesAreNotReplayed(t *testing.T) {
	var calls atomic.Int64
	ask := func(c *Client) error {
		calls.Add(1)
		return c.ChatParsed(t.Context(), simpleRequest("q"), Ask{What: "rubric", Repairs: 1, Parse: wantOK, Repair: repairTurn})
	}
	t.Run("failed exchange", func(t *testing.T) {
		srv := newServer(t, replies("bad", "worse", "ok at last"))
		path := t.TempDir() + "/cache.db"
		cache := openCache(t, path, nil)
		c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
		if err := ask(c); !errors.As(err, new(*ParseError)) {
			t.Fatalf("first: %v", err)
		}
		cache.Close()
		cache = openCache(t, path, nil)
		defer cache.Close()
		c = newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
		if err := ask(c); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if srv.hits.Load() != 3 {
			t.Errorf("%d requests; want 2 and then 1 fresh one", srv.hits.Load())
		}
		if st := cache.Stats(); st.Tombstones != 1 {
			t.Errorf("stats %+v; want the repair turn's tombstone left (the first turn was answered again)", st)
		}
	})
	t.Run("repaired exchange", func(t *testing.T) {
		srv := newServer(t, replies("bad", "ok"))
		cache := openTestCache(t)
		c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
		for range 2 {
			if err := ask(c); err != nil {
				t.Fatal(err)
			}
		}
		if srv.hits.Load() != 2 || cache.Stats().Tombstones != 0 {
			t.Errorf("%d requests, %d tombstones; want 2 and 0", srv.hits.Load(), cache.Stats().Tombstones)
		}
	})
}

// TestChatParsedKeepUnusable: an exchange that never parsed is asked
// afresh the next time (its cached replies are invalidated), unless the
// caller keeps the failure (Ask.KeepUnusable): then asking again replays
// it from the cache and sends nothing.
func TestChatParsedKeepUnusable(t *testing.T) {
	for _, keep := range []bool{false, true} {
		srv := newServer(t, replies("bad"))
		cache, err := cache.Open(filepath.Join(t.TempDir(), "cache.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cache.Close() })
		c := newTestClient(t, srv.endpoint(), fastOptions(), cache, nil)
		ask := Ask{What: "verdicts", Repairs: 1, Parse: wantOK, Repair: repairTurn, KeepUnusable: keep}
		for round := range 2 {
			var pe *ParseError
			if err := c.ChatParsed(t.Context(), simpleRequest("q"), ask); !errors.As(err, &pe) {
				t.Fatalf("keep=%v round %d: %v, want a ParseError", keep, round, err)
			}
		}
		want := int64(4) // two turns, asked twice
		if keep {
			want = 2
		}
		if got := srv.hits.Load(); got != want {
			t.Errorf("keep=%v: %d requests sent for the same exchange asked twice, want %d", keep, got, want)
		}
	}
}
