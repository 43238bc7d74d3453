package sim

import "sync"

// maxAnswerKeys bounds the keys an answerCounts tracks; beyond it new keys
// are only counted as untracked.
const maxAnswerKeys = 1 << 22

// answerCounts counts how many times each key (a request key, or a hashed
// custom_id) was answered with status 200, so that tests can prove that no
// request was paid for twice.
type answerCounts struct {
	mu        sync.Mutex
	n         map[uint64]uint32
	repeated  int64 // keys answered more than once
	untracked int64 // answers not counted because the map was full
}

func (a *answerCounts) note(k uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = make(map[uint64]uint32)
	}
	c, ok := a.n[k]
	if !ok && len(a.n) >= maxAnswerKeys {
		a.untracked++
		return
	}
	a.n[k] = c + 1
	if c == 1 {
		a.repeated++
	}
}

func (a *answerCounts) get(k uint64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.n[k])
}

// summary returns the keys answered more than once and the answers not
// tracked.
func (a *answerCounts) summary() (repeated, untracked int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.repeated, a.untracked
}
