package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/schema"
)

// ORSOptions tune the Open Reward Standard environment (ors.go).
type ORSOptions struct {
	// Env is the environment's name, the first segment of its paths
	// (default "rubricforge").
	Env string
	// MaxSessions bounds the sessions held at once (default 4096); a
	// session past it is refused with 503 once the idle ones are dropped.
	MaxSessions int
	// SessionIdle is how long a session lives without a request naming it
	// (default 15m, the SDK's own server's); the reaper drops it then.
	SessionIdle time.Duration
	// ReapEvery is how often Serve's reaper looks for idle sessions
	// (default SessionIdle/4, at most 30s).
	ReapEvery time.Duration
	// Now is the sessions' clock (default time.Now); tests move it.
	Now func() time.Time
}

func (o *ORSOptions) setDefaults() {
	if o.Env == "" {
		o.Env = "rubricforge"
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 4096
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 15 * time.Minute
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = min(o.SessionIdle/4, 30*time.Second)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// orsSession is one episode: the task it was created for and, once the
// answer is scored, the tool output (replayed to a client that reconnects
// with the call's task_id).
type orsSession struct {
	lab      *schema.Label
	lastSeen time.Time
	callID   string // the answer call's task_id, "" before the call
	output   []byte // the answer call's RunToolOutput, nil until scored
	scoring  bool   // an answer call is being scored
}

// orsSessions holds the sessions, bounded in count and idle time. It is
// safe for concurrent use.
type orsSessions struct {
	mu   sync.Mutex
	m    map[string]*orsSession
	peak int // the most sessions m held since it was last rebuilt
	opt  ORSOptions
}

func newORSSessions(opt ORSOptions) *orsSessions {
	return &orsSessions{m: map[string]*orsSession{}, opt: opt}
}

// errSessionExists, errTooManySessions and errNoSession are the refusals of
// the session table.
var (
	errSessionExists   = errors.New("session already exists")
	errTooManySessions = errors.New("too many sessions")
	errNoSession       = errors.New("no such session (never created, deleted, or dropped after --ors-session-idle without a request)")
)

// create adds a session for lab; at the bound it drops the idle sessions
// first and refuses when none was.
func (t *orsSessions) create(sid string, lab *schema.Label) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opt.Now()
	if _, ok := t.m[sid]; ok {
		return errSessionExists
	}
	if len(t.m) >= t.opt.MaxSessions {
		t.reapLocked(now)
	}
	if len(t.m) >= t.opt.MaxSessions {
		return fmt.Errorf("%w: %d sessions open (--ors-max-sessions) and none idle for --ors-session-idle %s; delete finished sessions or retry", errTooManySessions, len(t.m), t.opt.SessionIdle)
	}
	t.m[sid] = &orsSession{lab: lab, lastSeen: now}
	t.peak = max(t.peak, len(t.m))
	return nil
}

// touch marks sid used now and returns a copy of it.
func (t *orsSessions) touch(sid string) (orsSession, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[sid]
	if !ok {
		return orsSession{}, errNoSession
	}
	s.lastSeen = t.opt.Now()
	return *s, nil
}

// startCall marks sid's answer call as being scored under callID; it
// refuses a second answer to a session (one answer per episode), and a
// call while one is being scored.
func (t *orsSessions) startCall(sid, callID string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.m[sid]
	switch {
	case !ok:
		return errNoSession
	case s.output != nil:
		return errors.New("this episode is finished: its answer was scored (finished: true); create a new session for another answer")
	case s.scoring:
		return errors.New("the answer of this session is being scored; wait for its output, or reconnect with its task_id")
	}
	s.scoring, s.callID, s.lastSeen = true, callID, t.opt.Now()
	return nil
}

// endCall records the scored output of sid's call (nil: the call did not
// finish, the session takes another).
func (t *orsSessions) endCall(sid string, output []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[sid]; ok {
		s.scoring, s.output, s.lastSeen = false, output, t.opt.Now()
	}
}

// remove deletes sid; it reports whether it was there.
func (t *orsSessions) remove(sid string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[sid]
	delete(t.m, sid)
	t.shrinkLocked()
	return ok
}

// len is the number of sessions held.
func (t *orsSessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// reap drops the sessions idle for SessionIdle and returns how many.
func (t *orsSessions) reap(now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reapLocked(now)
}

func (t *orsSessions) reapLocked(now time.Time) int {
	n := 0
	for sid, s := range t.m {
		if !s.scoring && now.Sub(s.lastSeen) >= t.opt.SessionIdle {
			delete(t.m, sid)
			n++
		}
	}
	t.shrinkLocked()
	return n
}

// shrinkLocked rebuilds the map once it holds a quarter of its peak: a Go
// map keeps the room of its deleted entries, so 10,000 abandoned sessions
// would otherwise hold their buckets for good.
func (t *orsSessions) shrinkLocked() {
	if t.peak < 64 || len(t.m) > t.peak/4 {
		return
	}
	m := make(map[string]*orsSession, len(t.m))
	for k, v := range t.m {
		m[k] = v
	}
	t.m, t.peak = m, len(m)
}

// run drops idle sessions every ReapEvery until ctx ends.
func (t *orsSessions) run(ctx context.Context) {
	tick := time.NewTicker(t.opt.ReapEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.reap(t.opt.Now())
		}
	}
}

// maxSessionID bounds an X-Session-ID.
const maxSessionID = 128

// checkSessionID says what is wrong with a session id a client sends.
func checkSessionID(sid string) error {
	switch {
	case sid == "":
		return errors.New("the X-Session-ID header is required (the sid /create_session streamed)")
	case len(sid) > maxSessionID:
		return fmt.Errorf("X-Session-ID: %d bytes, at most %d", len(sid), maxSessionID)
	}
	for _, c := range []byte(sid) {
		if c < 0x21 || c > 0x7e {
			return errors.New("X-Session-ID: printable ASCII only")
		}
	}
	return nil
}

// newID is a random 128-bit id in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}
