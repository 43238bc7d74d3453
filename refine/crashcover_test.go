package refine

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
)

// crashEvery is the stride of the default cover of crash points (see
// crashCover).
const crashEvery = 16

// crashCover is the crash points a crash sweep visits. make test-long
// (longtest) visits every operation of ops; make test a cover, as
// corpus's crash tests pick theirs: the first operation of every kind
// (every kind is crashed at), every crashEvery-th operation and the last
// one; and the commit of --out, the last rename (the work directory
// renamed into place) with the operations just before and after it (the
// syncs of its parent).
func crashCover(t *testing.T, ops []crashfs.Op) []crashfs.Op {
	t.Helper()
	if longtest.Pick(t, false, true) {
		return ops
	}
	commit := -1
	for i, op := range ops {
		if op.Kind == crashfs.OpRename {
			commit = i
		}
	}
	seen := map[crashfs.Kind]bool{}
	var out []crashfs.Op
	for i, op := range ops {
		firstOfKind := !seen[op.Kind]
		seen[op.Kind] = true
		aroundCommit := commit >= 0 && i >= commit-1 && i <= commit+1
		if i%crashEvery == 0 || firstOfKind || aroundCommit || i == len(ops)-1 {
			out = append(out, op)
		}
	}
	t.Logf("crashing at %d of %d operations that change the disk", len(out), len(ops))
	return out
}
