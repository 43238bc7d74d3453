package livestate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

// Options open a Store.
type Options struct {
	Settings
	// Replica names this rewardd among those sharing the directory
	// (default "default"); its log is DIR/REPLICA.log.
	Replica string
	// FS is the file system (default fsys.OS).
	FS fsys.FS
	// Now is the clock of the sessions' records (default time.Now).
	Now func() time.Time
}

// replicaName is what a replica may be called: it names a file.
var replicaName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Store is the live state of the problems one replica keeps. It is safe
// for concurrent use.
type Store struct {
	dir     string
	opt     Options
	log     *applog.Log
	claims  *claims
	mu      sync.Mutex // guards problems
	probs   map[string]*problem
	queue   chan pendingWrite
	stopped chan struct{}
	// Torn is how many bytes of a torn last line Open cut off; Repaired how
	// many decisions it wrote again that a crash had cut off.
	Torn      int64
	Repaired  int
	closeOnce sync.Once
	spentMu   sync.Mutex
	spent     float64 // elicitation cost logged in all sessions
}

// pendingWrite is lines waiting for the writer, and who waits for them.
type pendingWrite struct {
	lines []byte
	done  chan error
}

// Open opens (creating) the state directory, claims the replica's log,
// replays it, writes any decision a crash cut off, and logs a session
// with opt's settings.
func Open(dir string, opt Options) (*Store, error) {
	if opt.Replica == "" {
		opt.Replica = "default"
	}
	if !replicaName.MatchString(opt.Replica) {
		return nil, fmt.Errorf("replica name %q: letters, digits, '.', '_' and '-', at most 64, not starting with a sign", opt.Replica)
	}
	if err := opt.Settings.Check(); err != nil {
		return nil, err
	}
	if opt.FS == nil {
		opt.FS = fsys.OS
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if err := fsys.MkdirAllSynced(opt.FS, dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the state directory %s: %w", dir, err)
	}
	s := &Store{dir: dir, opt: opt, probs: map[string]*problem{}, queue: make(chan pendingWrite, 1024), stopped: make(chan struct{})}
	r := newReplay(s.probs, opt.Replica)
	path := filepath.Join(dir, opt.Replica+".log")
	l, tail, err := applog.Open(path, applog.Options{FS: opt.FS, Lock: true}, func(ln applog.Line) error { return r.line(ln.Data, ln.No) })
	if err != nil {
		if errors.Is(err, applog.ErrLocked) {
			return nil, fmt.Errorf("another rewardd holds the state log %s: %w; give each rewardd sharing --state-dir its own --replica-id", path, err)
		}
		return nil, fmt.Errorf("reading the state log %s: %w", path, err)
	}
	s.log, s.Torn, s.spent = l, tail.Torn, r.spent
	var repair bytes.Buffer
	for _, p := range s.probs {
		for i := range p.unconfirmed {
			repair.Write(mustLine(&p.unconfirmed[i]))
		}
		s.Repaired += len(p.unconfirmed)
		p.unconfirmed = nil
	}
	set := opt.Settings
	repair.Write(mustLine(&record{T: recOpen, Replica: opt.Replica, At: opt.Now().UTC().Format(time.RFC3339), Settings: &set}))
	if _, err := l.Append(repair.Bytes()); err != nil {
		_ = l.Close() // every append is synced or cut back; err is the failure
		return nil, err
	}
	s.claims = newClaims(opt.FS, dir, opt.Replica)
	for id := range s.probs {
		if err := s.claims.claim(id); err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("the state log %s holds problem %s: %w", l.Path(), id, err)
		}
	}
	go s.writer()
	return s, nil
}

// mustLine encodes a record as a line; a record always encodes.
func mustLine(r *record) []byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("livestate: encoding a record: %v", err))
	}
	return append(b, '\n')
}

// Close stops the writer once the lines queued are written, and closes
// the log.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.queue)
		<-s.stopped
		err = s.log.Close()
	})
	return err
}

// writer writes queued lines, many writes in one append and one sync.
func (s *Store) writer() {
	defer close(s.stopped)
	var batch []pendingWrite
	var buf []byte
	for first := range s.queue {
		batch, buf = append(batch[:0], first), append(buf[:0], first.lines...)
	more:
		for len(buf) < 4<<20 {
			select {
			case w, ok := <-s.queue:
				if !ok {
					break more
				}
				batch = append(batch, w)
				buf = append(buf, w.lines...)
			default:
				break more
			}
		}
		_, err := s.log.Append(buf)
		for _, w := range batch {
			if w.done != nil {
				w.done <- err
			}
		}
	}
}

// write queues lines; wait reports when they are durable.
func (s *Store) write(lines []byte) (wait func() error) {
	done := make(chan error, 1)
	s.queue <- pendingWrite{lines: lines, done: done}
	return func() error { return <-done }
}

// problem returns the state of id, nil when the store has none.
func (s *Store) problem(id string) *problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.probs[id]
}

// ErrClaimed is wrapped by Begin's error for a problem another replica
// keeps the live state of.
var ErrClaimed = errors.New("another replica keeps this problem's live state")

// Begin returns the view a group of lab's problem is scored with. A
// problem seen for the first time is claimed for this replica and its
// rubric logged as version 1; a problem whose rubric changed since (a new
// corpus or label) starts over at the next version.
func (s *Store) Begin(lab *schema.Label) (*View, error) {
	base := RubricHash(lab.Rubric)
	s.mu.Lock()
	p := s.probs[lab.ID]
	if p != nil && p.base == base {
		v := p.currentView()
		s.mu.Unlock()
		return v, nil
	}
	if p == nil {
		s.mu.Unlock()
		if err := s.claims.claim(lab.ID); err != nil { // file I/O, outside the lock
			return nil, fmt.Errorf("problem %s: %w", lab.ID, err)
		}
		s.mu.Lock()
		if p = s.probs[lab.ID]; p == nil {
			p = &problem{id: lab.ID}
			s.probs[lab.ID] = p
		}
		if p.base == base { // another group began it meanwhile
			v := p.currentView()
			s.mu.Unlock()
			return v, nil
		}
	}
	p.reset(base, lab.Rubric, p.version+1)
	v := p.currentView()
	wait := s.write(mustLine(&record{T: recBase, P: lab.ID, Hash: base, V: p.version, Items: lab.Rubric}))
	s.mu.Unlock()
	return v, wait()
}

// Group is a scored group's counts, over the responses sampled on-policy
// whose judgment did not fail.
type Group struct {
	Problem string
	Version int64  // the version of the view it was scored with
	Hash    uint64 // its responses' identity: a group recorded again (a retry) counts once
	Scheme  string
	N       int // judged on-policy responses
	Correct int // of them correct
	// Items are, per judged item (View.Judged), its id, the responses that
	// satisfied it and those of them that are correct.
	Items [][3]int
}

// Record adds a group to its problem's window, takes the decisions the
// window then calls for, and returns once both are durable. A group with
// no judged response is not recorded; one recorded already is not again.
func (s *Store) Record(g Group) error {
	p := s.problem(g.Problem)
	if p == nil {
		return fmt.Errorf("livestate: problem %s was not begun", g.Problem)
	}
	if g.N == 0 {
		return nil
	}
	s.mu.Lock()
	if p.seenGroup(g.Hash, s.opt.Window) {
		s.mu.Unlock()
		return nil
	}
	r := record{T: recGroup, P: g.Problem, V: g.Version, H: fmt.Sprintf("%016x", g.Hash), S: g.Scheme, N: g.N, Z: g.Correct, I: g.Items}
	p.addGroup(&r, s.opt.Window)
	lines := mustLine(&r)
	for _, d := range p.decide(s.opt.Settings) {
		lines = append(lines, mustLine(&d)...)
	}
	wait := s.write(lines)
	s.mu.Unlock()
	return wait()
}

// Candidate is an elicited criterion the validity judge found valid, with
// the evidence it came from.
type Candidate struct {
	Item     schema.Item // its type, text and weight; the id is given here
	Evidence Evidence
	Cost     float64 // what its elicitation cost, for the budget
}

// AddCandidates adds elicited criteria to a problem's live rubric as
// candidates (judged with the group from now on, paid only once admitted),
// logs the rejected ones with their reasons and the elicitation's cost,
// and returns once durable.
func (s *Store) AddCandidates(problemID string, valid []Candidate, rejected []Candidate, cost float64) error {
	p := s.problem(problemID)
	if p == nil {
		return fmt.Errorf("livestate: problem %s was not begun", problemID)
	}
	var lines []byte
	s.mu.Lock()
	for _, c := range valid {
		ev := c.Evidence
		r := record{T: recCandidate, P: problemID, ID: p.nextItemID(), Items: []schema.Item{c.Item}, Ev: &ev}
		p.addCandidate(&r)
		lines = append(lines, mustLine(&r)...)
	}
	for _, c := range rejected {
		ev := c.Evidence
		r := record{T: recReject, P: problemID, Items: []schema.Item{c.Item}, Ev: &ev}
		p.events = append(p.events, eventOf(&r, p.groups))
		lines = append(lines, mustLine(&r)...)
	}
	p.elicited = p.groups
	lines = append(lines, mustLine(&record{T: recElicit, P: problemID, Cost: cost})...)
	wait := s.write(lines)
	s.mu.Unlock()
	s.spentMu.Lock()
	s.spent += cost
	s.spentMu.Unlock()
	return wait()
}

// ElicitSpent is the elicitation cost the log holds, this session's
// included.
func (s *Store) ElicitSpent() float64 {
	s.spentMu.Lock()
	defer s.spentMu.Unlock()
	return s.spent
}

// ElicitDue reports whether a problem may be elicited for now: it has no
// candidate waiting, fewer admitted criteria than the cap, and every
// groups since its last elicitation.
func (s *Store) ElicitDue(problemID string, every int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.probs[problemID]
	if p == nil || p.groups-p.elicited < int64(every) && p.elicited > 0 {
		return false
	}
	admitted := 0
	for _, it := range p.items {
		switch {
		case it.State == StateCandidate:
			return false
		case it.Origin == OriginElicited && it.State != StateDropped:
			admitted++
		}
	}
	return admitted < s.opt.MaxAdmitted
}

// Replica is the store's replica name.
func (s *Store) Replica() string { return s.opt.Replica }

// Dir is the state directory.
func (s *Store) Dir() string { return s.dir }

// Settings are the store's settings.
func (s *Store) Settings() Settings { return s.opt.Settings }

// replay rebuilds problems from a log's records.
type replay struct {
	probs   map[string]*problem
	set     Settings
	replica string
	spent   float64
}

func newReplay(probs map[string]*problem, replica string) *replay {
	return &replay{probs: probs, set: DefaultSettings(), replica: replica}
}

// line applies one record of the log.
func (rp *replay) line(data []byte, no int) error {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("line %d: %v", no, err)
	}
	if err := rp.apply(&r); err != nil {
		return fmt.Errorf("line %d: %w", no, err)
	}
	return nil
}

func (rp *replay) apply(r *record) error {
	if r.T == recOpen {
		if r.Settings != nil {
			rp.set = *r.Settings
		}
		if r.Replica != "" && rp.replica != "" && r.Replica != rp.replica {
			return fmt.Errorf("a session of replica %q in the log of replica %q", r.Replica, rp.replica)
		}
		return nil
	}
	if r.P == "" {
		return fmt.Errorf("a %q record without a problem", r.T)
	}
	p := rp.probs[r.P]
	if r.T == recBase {
		if p == nil {
			p = &problem{id: r.P}
			rp.probs[r.P] = p
		}
		if r.V != p.version+1 {
			return fmt.Errorf("problem %s: rubric as loaded at version %d after version %d", r.P, r.V, p.version)
		}
		if len(p.unconfirmed) > 0 {
			return fmt.Errorf("problem %s: the statistics call for a %s of item %d that the log does not have", r.P, p.unconfirmed[0].T, p.unconfirmed[0].ID)
		}
		p.reset(r.Hash, r.Items, r.V)
		return nil
	}
	if p == nil {
		return fmt.Errorf("a %q record of problem %s before its rubric", r.T, r.P)
	}
	switch r.T {
	case recGroup:
		var h uint64
		if _, err := fmt.Sscanf(r.H, "%x", &h); err != nil {
			return fmt.Errorf("a %q record of problem %s with the group hash %q: %w", r.T, r.P, r.H, err)
		}
		if p.seenGroup(h, rp.set.Window) {
			return nil
		}
		p.addGroup(r, rp.set.Window)
		p.unconfirmed = append(p.unconfirmed, p.decide(rp.set)...)
	case recRetire, recReinstate, recAdmit, recDrop:
		if len(p.unconfirmed) == 0 || !sameDecision(&p.unconfirmed[0], r) {
			want := "none"
			if len(p.unconfirmed) > 0 {
				want = fmt.Sprintf("%s of item %d at version %d", p.unconfirmed[0].T, p.unconfirmed[0].ID, p.unconfirmed[0].V)
			}
			return fmt.Errorf("problem %s: the log has a %s of item %d at version %d where its statistics call for %s", r.P, r.T, r.ID, r.V, want)
		}
		p.unconfirmed = p.unconfirmed[1:]
	case recCandidate:
		if len(r.Items) != 1 || r.ID != p.nextItemID() {
			return fmt.Errorf("problem %s: a candidate with id %d where the next id is %d", r.P, r.ID, p.nextItemID())
		}
		p.addCandidate(r)
	case recReject:
		p.events = append(p.events, eventOf(r, p.groups))
		p.elicited = p.groups
	case recElicit:
		rp.spent += r.Cost
		p.elicited = p.groups
	default:
		return fmt.Errorf("an unknown record %q", r.T)
	}
	return nil
}

// claims are the problems each replica sharing a state directory keeps:
// a file per problem, created only if absent, naming its replica.
type claims struct {
	fs      fsys.FS
	dir     string
	replica string
}

func newClaims(fs fsys.FS, dir, replica string) *claims {
	return &claims{fs: fs, dir: filepath.Join(dir, "claims"), replica: replica}
}

// claim claims problem id for this replica, or reports the replica that
// has it.
func (c *claims) claim(id string) error {
	name := fmt.Sprintf("%016x", xxhashString(id))
	sub := filepath.Join(c.dir, name[:2])
	if err := fsys.MkdirAllSynced(c.fs, sub, 0o755); err != nil {
		return err
	}
	path := filepath.Join(sub, name)
	f, err := c.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, werr := f.Write([]byte(c.replica + "\n" + id + "\n"))
		if werr == nil {
			werr = fsys.SyncFile(f)
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
		return fsys.SyncDir(c.fs, sub)
	}
	if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("claiming the problem: %w", err)
	}
	b, err := fsys.ReadFile(c.fs, path)
	if err != nil {
		return fmt.Errorf("reading the problem's claim: %w", err)
	}
	owner, _, _ := bytes.Cut(b, []byte("\n"))
	if string(owner) == c.replica || len(owner) == 0 {
		return nil
	}
	return fmt.Errorf("%w: replica %q claimed it in %s; send each problem's groups to one replica", ErrClaimed, owner, path)
}

func xxhashString(s string) uint64 { return xxhash.Sum64String(s) }

// Peek returns the view of lab's problem when this replica keeps it with
// lab's rubric, without beginning it (a single response's scoring).
func (s *Store) Peek(lab *schema.Label) (*View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.probs[lab.ID]
	if p == nil || p.base != RubricHash(lab.Rubric) {
		return nil, false
	}
	return p.currentView(), true
}
