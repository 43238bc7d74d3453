package audit

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rubricforge/rubricforge/discrim"
)

// Options tune an audit. Zero values select the defaults.
type Options struct {
	// MaxItems is the SRaR item limit checked; 0 takes the run's
	// distill.max_items, else DefaultMaxItems.
	MaxItems int
	// List is how many violations the report lists in full (the counts
	// are always exact); 0 means DefaultList, < 0 all.
	List int
	// Workers is how many files are read at once; 0 means GOMAXPROCS.
	Workers int
	// Tool names the program in the report, e.g. "validate v1.2".
	Tool string
	// Human is a filled-in annotation sheet (ReadSheet), HumanSheet its
	// path: with a path the report's reliability section corrects the
	// validity rates for the judge's errors against people. No path:
	// Wilson intervals only.
	Human      []Annotation
	HumanSheet string
	// JudgeError is the satisfaction judge's verdict error rate the
	// discrimination definitions tolerate (discrim.Options.JudgeError: 0
	// takes discrim.DefaultJudgeError, a negative rate none).
	JudgeError float64
}

// Defaults of Options.
const (
	DefaultMaxItems = 12 // the pipeline's distill.max_items
	DefaultList     = 100
)

// Audit reads every file of in once and computes the report. Files that
// cannot be read, and rows that do not decode, are listed in the report's
// InputProblems; the error is only the context's.
func Audit(ctx context.Context, in *Input, opt Options) (*Report, error) {
	set := &settings{maxItems: opt.MaxItems, list: opt.List, discrim: discrim.Options{JudgeError: opt.JudgeError}, judgeErrorFrom: JudgeErrorGiven}
	if opt.JudgeError == 0 {
		set.judgeErrorFrom = JudgeErrorDefault
		if in.SatisfactionPanel {
			rate, ok, err := SatisfactionJudgeError(ctx, in)
			if err != nil {
				return nil, err
			}
			if ok {
				set.discrim.JudgeError, set.judgeErrorFrom = max(rate, 1e-9), JudgeErrorPanel
			}
		}
	}
	if set.maxItems == 0 {
		set.maxItems = in.MaxItems
	}
	if set.maxItems == 0 {
		set.maxItems = DefaultMaxItems
	}
	if set.list == 0 {
		set.list = DefaultList
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	accs := make([]*acc, len(in.Files))
	probs := make([][]Problem, len(in.Files))
	read := make([]bool, len(in.Files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(in.Files)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(in.Files) || ctx.Err() != nil {
					return
				}
				accs[i], probs[i], read[i] = auditFile(ctx, in, i, set)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	total := newAcc(set, -1, "")
	var problems []Problem
	seen := make(map[string]struct{})
	filesRead := 0
	for i, a := range accs {
		problems = append(problems, probs[i]...)
		if read[i] {
			filesRead++
		}
		total.findDuplicates(a, seen)
		total.merge(a)
	}
	rep := total.report(in, set)
	rep.Tool = opt.Tool
	rep.Corpus.FilesRead = filesRead
	rep.InputProblems = append([]Problem{}, problems...)
	var people []ComparedItem // the sheet's rows matched with the corpus
	if rep.Validity != nil {
		rel, matched, err := reliability(ctx, in, rep.Validity, opt)
		if err != nil {
			return nil, err
		}
		rep.Reliability, people = rel, matched
	}
	panel, err := judgePanel(ctx, in, people)
	if err != nil {
		return nil, err
	}
	rep.JudgePanel = panel
	if rep.LiveStats, err = liveStatsOf(in); err != nil {
		return nil, err
	}
	return rep, nil
}

// auditFile reads the i-th file of in into a fresh accumulator. ok is false
// when the file could not be read to its end.
func auditFile(ctx context.Context, in *Input, i int, set *settings) (a *acc, probs []Problem, ok bool) {
	f := in.Files[i]
	a = newAcc(set, i, f.Path)
	bad := func(p Problem) { probs = append(probs, p) }
	size, err := f.size()
	if err != nil {
		return a, append(probs, Problem{File: f.Path, Error: fmt.Sprintf("listed but cannot be opened: %v", err)}), false
	}
	rows, err := scanRows(f, in.Format, func(r *row, n int64) error {
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		a.add(r, n)
		return nil
	}, bad)
	sizeNote := ""
	if f.Bytes >= 0 && size != f.Bytes {
		sizeNote = fmt.Sprintf("; it has %d bytes, the listing says %d", size, f.Bytes)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return a, probs, false
	case err != nil:
		return a, append(probs, Problem{File: f.Path, Error: fmt.Sprintf("unreadable after %d rows (those are audited): %v%s", a.records, err, sizeNote)}), false
	case f.Rows >= 0 && rows != f.Rows:
		probs = append(probs, Problem{File: f.Path, Error: fmt.Sprintf("holds %d rows, the listing says %d%s", rows, f.Rows, sizeNote)})
	case sizeNote != "":
		probs = append(probs, Problem{File: f.Path, Error: "changed since it was listed" + sizeNote})
	}
	return a, probs, true
}

// findDuplicates reports the ids of a (a later file) already seen, and
// adds the others to seen. It runs before a is merged, in file order, so
// the first occurrence of an id is never the one reported. a's listed
// violations are then put back in row order.
func (t *acc) findDuplicates(a *acc, seen map[string]struct{}) {
	v := &a.viol
	found := false
	for k, id := range a.ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			continue
		}
		row := a.idRows[k]
		v.current = v.current[:0] // counts this record once for the rule
		if _, had := slices.BinarySearch(v.rows, row); !had {
			v.records++
		}
		v.add(Violation{RecordID: id, Rule: RuleDuplicateID, Detail: "the id of an earlier record",
			File: a.file, Row: row, fileIdx: a.fileIdx}, -1)
		found = true
	}
	a.ids, a.idRows = nil, nil
	if !found {
		return
	}
	slices.SortStableFunc(v.listed, func(x, y Violation) int { return cmp.Compare(x.Row, y.Row) })
	if t.set.list >= 0 && len(v.listed) > t.set.list {
		v.listed = v.listed[:t.set.list]
	}
}
