package reward

import (
	"sync"
	"unsafe"

	"github.com/rubricforge/rubricforge/schema"
)

// groupScratch is the memory one /v1/score_group request works in: the
// unquoted responses, the rollouts and the results. A request takes one
// with getGroupScratch and puts it back once its answer is written, when
// nothing refers to that memory any more; the next request reuses it.
type groupScratch struct {
	buf  []byte // the responses, unquoted
	ends []int  // where each response ends in buf
	seen int    // the groupRequest fields read, as field* bits

	rollouts slab[Rollout]
	spans    slab[StepSpan]
	labels   slab[*schema.Label]
	mem      groupMemory
}

var groupScratchPool = sync.Pool{New: func() any { return new(groupScratch) }}

// getGroupScratch returns an empty scratch.
func getGroupScratch() *groupScratch {
	sc := groupScratchPool.Get().(*groupScratch)
	sc.resetResponses()
	sc.rollouts.reset()
	sc.spans.reset()
	sc.labels.reset()
	sc.mem.reset()
	return sc
}

// putGroupScratch keeps sc for reuse unless it holds more memory than the
// server keeps for one request.
func putGroupScratch(sc *groupScratch) {
	if sc.bytes() <= maxPooledBuffer {
		groupScratchPool.Put(sc)
	}
}

// bytes is about how much memory sc holds.
func (sc *groupScratch) bytes() int {
	return cap(sc.buf) + cap(sc.ends)*int(unsafe.Sizeof(0)) + sc.rollouts.bytes() + sc.spans.bytes() + sc.labels.bytes() +
		sc.mem.bytes()
}

func (sc *groupScratch) resetResponses() {
	sc.buf, sc.ends, sc.seen = sc.buf[:0], sc.ends[:0], 0
}

// groupMemory is what a group's results are carved from: ScoreGroup uses a
// new one, rewardd one it reuses.
type groupMemory struct {
	results        slab[Result]
	scored         slab[scored]
	items          slab[ItemVerdict]
	steps          slab[StepResult]
	advantages     slab[Advantage]
	stepAdvantages slab[StepAdvantage]
	maps           []Values // every map handed out since reset, to clear and hand out again
	mapsOut        int
}

func (m *groupMemory) reset() {
	m.results.reset()
	m.scored.reset()
	m.items.reset()
	m.steps.reset()
	m.advantages.reset()
	m.stepAdvantages.reset()
	m.mapsOut = 0
}

func (m *groupMemory) bytes() int {
	const mapBytes = 256 // a map of up to eight entries
	return m.results.bytes() + m.scored.bytes() + m.items.bytes() + m.steps.bytes() + m.advantages.bytes() +
		m.stepAdvantages.bytes() + len(m.maps)*mapBytes
}

// values returns an empty map.
func (m *groupMemory) values() Values {
	if m.mapsOut == len(m.maps) {
		m.maps = append(m.maps, make(Values, 8))
	}
	v := m.maps[m.mapsOut]
	m.mapsOut++
	clear(v)
	return v
}

// slab hands out slices carved from one backing array, which it reuses
// after reset.
type slab[T any] struct{ buf []T }

// grow makes room for n more elements in one allocation, if there is not.
func (s *slab[T]) grow(n int) {
	if s.buf == nil || len(s.buf)+n > cap(s.buf) { // a slice taken is never nil
		s.buf = make([]T, 0, max(n, 2*cap(s.buf)))
	}
}

// take returns n zero elements, with no room to append in place.
func (s *slab[T]) take(n int) []T {
	s.grow(n)
	i := len(s.buf)
	s.buf = s.buf[:i+n]
	out := s.buf[i : i+n : i+n]
	clear(out)
	return out
}

// extend appends to the slab with add and returns what add appended (nil
// for nothing), with no room to append in place.
func (s *slab[T]) extend(add func([]T) []T) []T {
	i := len(s.buf)
	s.buf = add(s.buf)
	if len(s.buf) == i {
		return nil
	}
	return s.buf[i:len(s.buf):len(s.buf)]
}

func (s *slab[T]) reset() { s.buf = s.buf[:0] }

func (s *slab[T]) bytes() int {
	var zero T
	return cap(s.buf) * int(unsafe.Sizeof(zero))
}
