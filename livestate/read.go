package livestate

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rubricforge/rubricforge/internal/applog"
	"github.com/rubricforge/rubricforge/internal/fsys"
)

// Dir is a state directory read without writing to it: every replica's
// problems, replayed.
type Dir struct {
	Path     string
	Replicas []string
	// Problems are the problems' stats, by problem id; a problem two
	// replicas kept is in Split instead, with both replicas' stats.
	Problems map[string]ProblemStats
	Split    map[string][]ProblemStats
	// Settings are each replica's last session's.
	Settings map[string]Settings
}

// Read replays every replica log of a state directory (REPLICA.log)
// without taking their locks or changing them: a torn last line is
// skipped, a decision a crash cut off is taken as recomputed.
func Read(fsy fsys.FS, dir string) (*Dir, error) {
	if fsy == nil {
		fsy = fsys.OS
	}
	entries, err := fsy.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("state directory %s: %w", dir, err)
		}
		return nil, err
	}
	d := &Dir{Path: dir, Problems: map[string]ProblemStats{}, Split: map[string][]ProblemStats{}, Settings: map[string]Settings{}}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if e.IsDir() || !ok || !replicaName.MatchString(name) {
			continue
		}
		if err := d.readReplica(fsy, name); err != nil {
			return nil, err
		}
	}
	if len(d.Replicas) == 0 {
		return nil, fmt.Errorf("state directory %s holds no state log (REPLICA.log): is it rewardd's --state-dir?", dir)
	}
	return d, nil
}

// readReplica replays one replica's log into d.
func (d *Dir) readReplica(fsy fsys.FS, replica string) error {
	path := filepath.Join(d.Path, replica+".log")
	probs := map[string]*problem{}
	rp := newReplay(probs, replica)
	if _, err := applog.Read(fsy, path, func(ln applog.Line) error { return rp.line(ln.Data, ln.No) }); err != nil {
		return fmt.Errorf("state log %s: %w", path, err)
	}
	d.Replicas = append(d.Replicas, replica)
	d.Settings[replica] = rp.set
	ids := make([]string, 0, len(probs))
	for id := range probs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		st := probs[id].report(replica, rp.set)
		if prev, dup := d.Problems[id]; dup {
			delete(d.Problems, id)
			d.Split[id] = append(d.Split[id], prev, st)
			continue
		}
		if d.Split[id] != nil {
			d.Split[id] = append(d.Split[id], st)
			continue
		}
		d.Problems[id] = st
	}
	return nil
}
