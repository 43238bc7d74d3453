package sim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"
)

// WarmWatch is a transport for tests of the order in which requests that
// share a prompt prefix are sent: it holds the first request of Kind of
// each group (Group names a request's group from its messages: a problem,
// a question) until another request of the group arrives or Hold passes,
// and counts the requests that arrived while their group's first was
// unanswered. A client that warms a group's prefix first (sends the first
// request alone, the others once it is answered) makes none, whatever the
// timing; one that sends them at once makes them early as soon as they come
// within Hold of each other. Other requests go to Next untouched.
type WarmWatch struct {
	Next  http.RoundTripper
	Kind  Kind
	Group func(msgs []Message) string
	Hold  time.Duration // default 100ms

	mu    sync.Mutex
	first map[string]chan struct{} // open while the group's first request is unanswered
	early int
}

// Early is the number of requests that arrived while their group's first
// was unanswered; Groups the number of groups seen.
func (w *WarmWatch) Early() (early, groups int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.early, len(w.first)
}

// Reset forgets the groups seen and the early requests counted.
func (w *WarmWatch) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.first, w.early = nil, 0
}

// RoundTrip holds, counts and passes on r.
func (w *WarmWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Messages []Message `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil || Classify(req.Messages) != w.Kind {
		return w.Next.RoundTrip(r)
	}
	g := w.Group(req.Messages)
	w.mu.Lock()
	if w.first == nil {
		w.first = map[string]chan struct{}{}
	}
	pending, seen := w.first[g]
	if !seen {
		pending = make(chan struct{})
		w.first[g] = pending
	} else if pending != nil {
		w.early++
		close(pending) // the first need not be held any longer
		w.first[g] = nil
	}
	w.mu.Unlock()
	if seen {
		return w.Next.RoundTrip(r)
	}
	hold := w.Hold
	if hold <= 0 {
		hold = 100 * time.Millisecond
	}
	t := time.NewTimer(hold)
	select { // a second request of the group comes now unless the client waits for the first
	case <-pending:
	case <-t.C:
	}
	t.Stop()
	resp, err := w.Next.RoundTrip(r)
	w.mu.Lock()
	if w.first[g] == pending {
		w.first[g] = nil // answered: what comes now is on time
	}
	w.mu.Unlock()
	return resp, err
}
