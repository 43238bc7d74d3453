package llm

import (
	"slices"
	"sync"
	"time"
)

// sending keeps the attempts out at the endpoint (sent, not yet answered)
// with their stage and start, so that Health can say how long the oldest
// has run: a request that runs far past the others of its stage (a model
// that does not stop, generating to its token limit) shows in the status
// line long before its attempt timeout.
type sending struct {
	mu   sync.Mutex
	next uint64
	out  map[uint64]sent
}

type sent struct {
	stage string
	start time.Time
}

// add records an attempt sent now; done forgets it.
func (s *sending) add(stage string) (done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.out == nil {
		s.out = map[uint64]sent{}
	}
	id := s.next
	s.next++
	s.out[id] = sent{stage, time.Now()}
	return func() {
		s.mu.Lock()
		delete(s.out, id)
		s.mu.Unlock()
	}
}

// oldest is the number of attempts out, and the stage and age of the
// oldest (the first of a tie in stage order).
func (s *sending) oldest(now time.Time) (n int, stage string, age time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.out {
		if d := now.Sub(a.start); n == 0 || d > age || d == age && a.stage < stage {
			stage, age = a.stage, d
		}
		n++
	}
	return n, stage, age
}

// typical is the median latency of a stage's recent successful attempts;
// 0 when it has none.
func (d *deadlines) typical(stage string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.stages[stage]
	if l == nil || l.n == 0 {
		return 0
	}
	s := slices.Clone(l.ring[:l.n])
	slices.Sort(s)
	return s[len(s)/2]
}
