package server

import (
	"sync"
	"unsafe"

	"github.com/rubricforge/rubricforge/internal/slab"
	"github.com/rubricforge/rubricforge/reward"
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

	rollouts slab.Slab[reward.Rollout]
	spans    slab.Slab[reward.StepSpan]
	labels   slab.Slab[*schema.Label]
	mem      reward.GroupMemory
}

var groupScratchPool = sync.Pool{New: func() any { return new(groupScratch) }}

// getGroupScratch returns an empty scratch.
func getGroupScratch() *groupScratch {
	sc := groupScratchPool.Get().(*groupScratch)
	sc.resetResponses()
	sc.rollouts.Reset()
	sc.spans.Reset()
	sc.labels.Reset()
	sc.mem.Reset()
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
	return cap(sc.buf) + cap(sc.ends)*int(unsafe.Sizeof(0)) + sc.rollouts.Bytes() + sc.spans.Bytes() + sc.labels.Bytes() +
		sc.mem.Bytes()
}

func (sc *groupScratch) resetResponses() {
	sc.buf, sc.ends, sc.seen = sc.buf[:0], sc.ends[:0], 0
}
