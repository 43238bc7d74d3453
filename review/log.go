package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/fsys"
)

// LogFormat names the review log's format in its header.
const LogFormat = "rubricforge-review/1"

// Actions of an entry.
const (
	ActionAccept = "accept" // the item stands as it is
	ActionReject = "reject" // the item is dropped
	ActionEdit   = "edit"   // the item is replaced by After
	ActionSkip   = "skip"   // the record is passed over for now
	ActionFlag   = "flag"   // the record needs a second look
	ActionUnflag = "unflag" // the record's flag is taken away
	ActionUndo   = "undo"   // the entry Undoes no longer counts
)

// recordActions are the actions on a whole record.
var recordActions = map[string]bool{ActionSkip: true, ActionFlag: true, ActionUnflag: true}

// itemActions are the actions on one item; the others are on a record.
var itemActions = map[string]bool{ActionAccept: true, ActionReject: true, ActionEdit: true}

// Header is a log's first line.
type Header struct {
	Format      string    `json:"format"`
	Fingerprint string    `json:"corpus_fingerprint"`
	Corpus      string    `json:"corpus"` // the path the page was started on, for people
	Reviewer    string    `json:"reviewer"`
	Created     time.Time `json:"created"`
}

// ItemState is what an item says: before and after an edit.
type ItemState struct {
	Type   string  `json:"type,omitempty"` // "" for a grounded criterion, which has no type
	Text   string  `json:"text"`
	Weight float64 `json:"weight"`
}

// Entry is one decision: one line of the log.
type Entry struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Reviewer string    `json:"reviewer"`
	Record   string    `json:"record"`
	// Question is set for a grounded record's criterion: the index of its
	// question (from 0); Item is then the criterion's position in that
	// question's criteria (from 1).
	Question *int32     `json:"question,omitempty"`
	Item     int32      `json:"item,omitempty"` // 0 for skip, flag and unflag, which are about the record
	Action   string     `json:"action"`
	Reason   string     `json:"reason,omitempty"`
	Before   *ItemState `json:"before,omitempty"`
	After    *ItemState `json:"after,omitempty"`
	Undoes   int64      `json:"undoes,omitempty"` // the Seq an undo takes back
}

// reviewerName is what a reviewer's name may hold: it names the log file.
var reviewerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckReviewer reports whether name can name a reviewer (and its log).
func CheckReviewer(name string) error {
	if !reviewerName.MatchString(name) {
		return fmt.Errorf("reviewer %q: a name is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Dir is where the logs of the corpus at path live: path/review for a
// directory, review/ beside a file, except that a shard of a run directory
// (RUN/shards/F) or a data file of an export (EXPORT/data/F) has its logs
// in RUN/review or EXPORT/review, never among the shards.
func Dir(corpusPath string) string {
	st, err := os.Stat(corpusPath)
	if err != nil || st.IsDir() {
		return filepath.Join(corpusPath, "review")
	}
	dir := filepath.Dir(corpusPath)
	parent := filepath.Dir(dir)
	switch filepath.Base(dir) {
	case "shards":
		if _, err := os.Stat(filepath.Join(parent, corpus.ManifestName)); err == nil {
			return filepath.Join(parent, "review")
		}
	case "data":
		if _, err := os.Stat(filepath.Join(parent, corpus.ExportManifestName)); err == nil {
			return filepath.Join(parent, "review")
		}
	}
	return filepath.Join(dir, "review")
}

// LogPath is reviewer's log of the corpus at corpusPath.
func LogPath(corpusPath, reviewer string) string {
	return filepath.Join(Dir(corpusPath), reviewer+".jsonl")
}

// Logs lists the logs in the review directory of the corpus at corpusPath,
// sorted; none when it has no review directory.
func Logs(corpusPath string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(Dir(corpusPath), "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("listing review logs: %w", err)
	}
	return files, nil
}

// ErrOtherCorpus is wrapped when a log was written for another corpus.
var ErrOtherCorpus = errors.New("the review log belongs to another corpus")

// ErrLogInUse is wrapped when another page holds the reviewer's log.
var ErrLogInUse = errors.New("the review log is in use")

// Log is a reviewer's log opened for appending (an applog.Log: a torn
// last line is cut off, every decision synced before it counts); it holds
// the log's lock until Close.
type Log struct {
	mu      sync.Mutex
	log     *applog.Log
	path    string
	header  Header
	entries []Entry
	next    int64
	// torn counts the bytes of a damaged last line cut off at Open.
	torn int64
}

// OpenLog opens (creating when missing) reviewer's log at path for the
// corpus with fingerprint fp. A log whose header names another fingerprint
// is refused (ErrOtherCorpus); a torn last line (a server killed while
// writing it) is cut off; any other line that does not decode is an error
// naming it. The log is locked: a second OpenLog of the same file fails
// with ErrLogInUse until Close.
func OpenLog(path, reviewer, fp, corpusPath string, now time.Time) (*Log, error) {
	return OpenLogFS(fsys.OS, path, reviewer, fp, corpusPath, now)
}

// OpenLogFS is OpenLog on the file system fsy.
func OpenLogFS(fsy fsys.FS, path, reviewer, fp, corpusPath string, now time.Time) (*Log, error) {
	if err := CheckReviewer(reviewer); err != nil {
		return nil, err
	}
	if err := fsys.MkdirAllSynced(fsy, filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("making the review directory: %w", err)
	}
	var p logParser
	al, tail, err := applog.Open(path, applog.Options{FS: fsy, Lock: true, Perm: 0o600}, p.line(path))
	if errors.Is(err, applog.ErrLocked) {
		return nil, fmt.Errorf("%s: another review page is writing it (one page per reviewer; give another --reviewer): %w", path, ErrLogInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("opening review log: %w", err)
	}
	l := &Log{log: al, path: path, header: p.header, entries: p.entries, torn: tail.Torn}
	if err := l.start(tail, reviewer, fp, corpusPath, now); err != nil {
		_ = al.Close()
		return nil, err
	}
	return l, nil
}

// start checks the header of a log read, or writes the header of a new
// one.
func (l *Log) start(tail applog.Tail, reviewer, fp, corpusPath string, now time.Time) error {
	if tail.Lines == 0 {
		l.header = Header{Format: LogFormat, Fingerprint: fp, Corpus: corpusPath, Reviewer: reviewer, Created: now.UTC()}
		return l.appendLine(l.header, 0)
	}
	h := l.header
	if h.Fingerprint != fp {
		return otherCorpus(l.path, h, fp)
	}
	if h.Reviewer != reviewer {
		return fmt.Errorf("%s is %s's review log, not %s's", l.path, h.Reviewer, reviewer)
	}
	for _, e := range l.entries {
		l.next = max(l.next, e.Seq)
	}
	return nil
}

func otherCorpus(path string, h Header, fp string) error {
	return fmt.Errorf("%s was written for the corpus with fingerprint %s (%s), not this one (%s): %w",
		path, h.Fingerprint, h.Corpus, fp, ErrOtherCorpus)
}

// logParser reads a log's lines: the header, then the entries.
type logParser struct {
	header  Header
	entries []Entry
	lines   int
	err     error // the line that stopped the reading
}

// line takes one whole line of the log at path; a line that does not
// decode is an error naming the file and line.
func (p *logParser) line(path string) func(applog.Line) error {
	return func(ln applog.Line) error {
		p.err = p.take(path, ln)
		return p.err
	}
}

// take reads one line: the header, then an entry.
func (p *logParser) take(path string, ln applog.Line) error {
	p.lines++
	if p.lines == 1 {
		if err := json.Unmarshal(ln.Data, &p.header); err != nil || p.header.Format != LogFormat {
			return fmt.Errorf("%s:%d: not a review log header (want format %q)", path, ln.No, LogFormat)
		}
		return nil
	}
	var e Entry
	if err := json.Unmarshal(ln.Data, &e); err != nil {
		return fmt.Errorf("%s:%d: the entry does not decode: %w", path, ln.No, err)
	}
	if err := checkEntry(e); err != nil {
		return fmt.Errorf("%s:%d: %w", path, ln.No, err)
	}
	p.entries = append(p.entries, e)
	return nil
}

// checkEntry reports an entry no page writes.
func checkEntry(e Entry) error {
	switch {
	case e.Record == "" && e.Action != ActionUndo:
		return errors.New("the entry names no record")
	case itemActions[e.Action] && e.Item <= 0:
		return fmt.Errorf("a %s entry names no item", e.Action)
	case e.Action == ActionEdit && e.After == nil:
		return errors.New("an edit entry has no after")
	case e.Action == ActionUndo && e.Undoes <= 0:
		return errors.New("an undo entry names no entry (undoes)")
	case e.Question != nil && (*e.Question < 0 || !itemActions[e.Action]):
		return fmt.Errorf("a %s entry names question %d", e.Action, *e.Question)
	case !itemActions[e.Action] && !recordActions[e.Action] && e.Action != ActionUndo:
		return fmt.Errorf("action %q is not one of accept, reject, edit, skip, flag, unflag, undo", e.Action)
	}
	return nil
}

// ReadLog reads the log at path for the corpus with fingerprint fp (any
// corpus when fp is ""). The torn last line of a server killed while
// writing it is left out.
func ReadLog(path, fp string) (Header, []Entry, error) { return ReadLogFS(fsys.OS, path, fp) }

// ReadLogFS is ReadLog on the file system fsy.
func ReadLogFS(fsy fsys.FS, path, fp string) (Header, []Entry, error) {
	f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return Header{}, nil, fmt.Errorf("reading review log: %w", err)
	}
	defer func() { _ = f.Close() }()
	h, entries, err := parseLog(path, f)
	if err != nil {
		return h, nil, err
	}
	if fp != "" && h.Fingerprint != fp {
		return h, nil, otherCorpus(path, h, fp)
	}
	return h, entries, nil
}

// parseLog reads a whole log by applog's rule (a torn last line is left
// out). A line that does not decode is an error naming the file and line.
func parseLog(path string, r io.Reader) (Header, []Entry, error) {
	var p logParser
	tail, err := applog.Parse(r, p.line(path))
	switch {
	case p.err != nil:
		return p.header, nil, p.err
	case err != nil:
		return p.header, nil, fmt.Errorf("reading review log %s: %w", path, err)
	case tail.Lines == 0:
		return p.header, nil, fmt.Errorf("%s is empty: not a review log", path)
	}
	return p.header, p.entries, nil
}

// Header is the log's header.
func (l *Log) Header() Header { return l.header }

// Torn is how many bytes of a damaged last line (a decision being written
// when a page was killed) OpenLog cut off; 0 when the log was whole.
func (l *Log) Torn() int64 { return l.torn }

// Path is the log's file.
func (l *Log) Path() string { return l.path }

// Entries is a copy of the log's entries.
func (l *Log) Entries() []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Entry(nil), l.entries...)
}

// Append numbers e, stamps it with the reviewer, writes it as one line and
// syncs the file; only then is it part of the log. A write that failed is
// cut back off (the next decision takes its number); after a failed sync
// the log takes no more decisions (restart the page).
func (l *Log) Append(e Entry) (Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.Seq = l.next + 1
	e.Reviewer = l.header.Reviewer
	e.Time = e.Time.UTC()
	if err := checkEntry(e); err != nil {
		return e, err
	}
	if err := l.appendLine(e, e.Seq); err != nil {
		return e, err
	}
	l.next = e.Seq
	l.entries = append(l.entries, e)
	return e, nil
}

// appendLine writes v as one line and syncs.
func (l *Log) appendLine(v any, seq int64) error {
	if _, err := l.log.AppendJSON(v); err != nil {
		if errors.Is(err, applog.ErrBroken) {
			return fmt.Errorf("review entry %d: the review log cannot take more decisions after an earlier write failed (restart the page): %w", seq, err)
		}
		return fmt.Errorf("writing review entry %d: %w", seq, err)
	}
	return nil
}

// Close unlocks and closes the log.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.log.Close()
}
