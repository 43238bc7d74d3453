package simproc

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

// TestLogFollowsTheEndpoint: a chat request to the endpoint in its own
// process is counted and logged with its hash and status, each request
// once; a request for something else (the model list) is neither.
func TestLogFollowsTheEndpoint(t *testing.T) {
	t.Parallel()
	s := Start(t, sim.Config{Answers: map[string]string{"What is 2+2?": "4"}})
	post := func(content string) {
		t.Helper()
		resp, err := http.Post(s.URL+"/chat/completions", "application/json",
			strings.NewReader(`{"model":"simulated","messages":[{"role":"user","content":"`+content+`"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest { // a prompt the endpoint does not know
			t.Fatalf("status %d, want 400", resp.StatusCode)
		}
	}
	post("What is 2+2?")
	resp, err := http.Get(s.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	post("What is 3+3?")
	deadline := time.Now().Add(time.Minute)
	for len(s.Log()) < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the log is followed through a pipe
	}
	log := s.Log()
	if s.Count() != 2 || len(log) != 2 || log[0].Status != http.StatusBadRequest || log[0].Hash == 0 || log[0].Hash == log[1].Hash {
		t.Fatalf("count %d, log %+v; want the 2 chat requests, each logged with its own hash and its status", s.Count(), log)
	}
}
