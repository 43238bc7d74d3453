package pipeline

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/internal/fsys/crashfs"
	"github.com/rubricforge/rubricforge/internal/testkit/longtest"
)

// crashCover returns the operations of ops that change the disk (their
// indexes) that the run crash tests visit: every one in the long form (make
// test-long) or with -runcrash.all; otherwise a deterministic cover of
// them: every kind of operation (write, sync, rename, ...) and, with
// byFile, every kind of file (shard, response cache, manifest, report, job
// file, ...) at least once, each chosen from a part of the run no earlier
// choice is near, and the run's last operation.
func crashCover(t *testing.T, ops []crashfs.Op, byFile bool) []int {
	t.Helper()
	var all []crashfs.Op
	for _, op := range ops {
		if op.Mutates() {
			all = append(all, op)
		}
	}
	if len(all) == 0 || *runCrashAll || longtest.Enabled() {
		idx := make([]int, len(all))
		for i, op := range all {
			idx[i] = op.Index
		}
		return idx
	}
	kinds, files := map[string]bool{}, map[string]bool{}
	out := []int{all[len(all)-1].Index}
	for _, i := range spreadOrder(len(all)) {
		op := all[i]
		kind, file := op.Kind.String(), fileKind(op.Path)
		if kinds[kind] && (files[file] || !byFile) {
			continue
		}
		kinds[kind] = true
		files[file] = true
		out = append(out, op.Index)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	t.Logf("the default form: %d of the %d operations that change the disk, covering %d kinds of operation on %d kinds of file (by file: %v; %s=1 or -runcrash.all visits every one)",
		len(out), len(all), len(kinds), len(files), byFile, longtest.Env)
	return out
}

// spreadOrder returns 0..n-1 in an order where each one is far from those
// before it: the middle, then the quarters, then the eighths, ... (the
// van der Corput sequence).
func spreadOrder(n int) []int {
	var out []int
	seen := make([]bool, n)
	for k := 0; len(out) < n; k++ {
		x, f := 0.0, 0.5
		for v := k; v > 0; v >>= 1 {
			if v&1 == 1 {
				x += f
			}
			f /= 2
		}
		if i := int(x * float64(n)); !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	return out
}

// fileKind names the kind of file at p: its name without a leading dot,
// digits or anything after its first dot (a temporary file is of the kind
// of the file it replaces: .manifest.json.1f2e.tmp is a manifest).
func fileKind(p string) string {
	name := strings.TrimPrefix(path.Base(p), ".")
	name, _, _ = strings.Cut(name, ".")
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, name)
}

// failNext makes the first operation of fsy at or after like's index that
// is of like's kind and on a file of its kind fail with err, once: the runs'
// operations interleave differently each time, and the one at like's index
// in this run may be another kind of operation.
func failNext(fsy *crashfs.FS, like crashfs.Op, err error) {
	kind, file, fired := like.Kind, fileKind(like.Path), false
	fsy.FailWhen(func(op crashfs.Op) bool { // called under fsy's lock
		if fired || op.Index < like.Index || op.Kind != kind || fileKind(op.Path) != file {
			return false
		}
		fired = true
		return true
	}, err)
}
