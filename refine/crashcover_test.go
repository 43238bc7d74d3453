package refine

import (
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
)

// crashEvery is the stride of the default cover of crash points (see
// crashCover).
const crashEvery = 8

// crashCover is the crash points a crash sweep visits. make test-long
// (longtest) visits every operation of ops; make test a cover: every
// rename with the operations just before and after it (the directory
// syncs around a commit), the first and last operation of every kind, and
// every crashEvery-th operation. Every kind of operation is crashed at, and
// every commit point.
func crashCover(t *testing.T, ops []crashfs.Op) []crashfs.Op {
	t.Helper()
	if longtest.Pick(t, false, true) {
		return ops
	}
	seen := map[crashfs.Kind]bool{}
	var out []crashfs.Op
	for i, op := range ops {
		firstOfKind := !seen[op.Kind]
		seen[op.Kind] = true
		afterRename := i > 0 && ops[i-1].Kind == crashfs.OpRename
		if i%crashEvery == 0 || firstOfKind || op.Kind == crashfs.OpRename || afterRename || i == len(ops)-1 {
			out = append(out, op)
		}
	}
	t.Logf("crashing at %d of %d operations that change the disk", len(out), len(ops))
	return out
}
