package pipeline

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestDamagedShardRecoveredFromTheCache: a listed shard with flipped bytes
// stops a resumed run (an error, exit 1) and shows in the status; after
// corpus.Repair the same run makes the shard's records again from the
// response cache: no request is sent, every problem is in the corpus once.
func TestDamagedShardRecoveredFromTheCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 20, sim.Config{KeepLog: true})
	job := f.job
	first := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	want := runtest.ReadCorpus(t, job.Out)
	if len(want) != int(first.Problems.Done) || len(want) < 8 {
		t.Fatalf("first run: %d records, %d done", len(want), first.Problems.Done)
	}
	m, err := corpus.ReadManifest(job.Out)
	if err != nil || len(m.Shards) < 2 {
		t.Fatalf("manifest: %v, %d shards", err, len(m.Shards))
	}
	victim := filepath.Join(job.Out, filepath.FromSlash(m.Shards[0].File))
	data, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(data) / 2; i < len(data)/2+4; i++ {
		data[i] ^= 0xff
	}
	if err := os.WriteFile(victim, data, 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = Run(context.Background(), job, Options{HTTPClient: runtest.InProcess})
	if !errors.Is(err, corpus.ErrDamaged) || !strings.Contains(err.Error(), m.Shards[0].File) {
		t.Fatalf("resuming over a damaged shard: %v", err)
	}
	st, err := ReadStatus(job.Out)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	st.WriteText(&text)
	if len(st.Damaged) != 1 || !strings.Contains(text.String(), "damaged: 1 shard(s)") || !strings.Contains(text.String(), "distill repair") {
		t.Errorf("status of a damaged run: %+v\n%s", st.Damaged, text.String())
	}
	if after, _ := corpus.ReadManifest(job.Out); after.Shards[0].XXHash64 != m.Shards[0].XXHash64 {
		t.Errorf("the damaged shard's hash reached the manifest")
	}

	res, err := corpus.Repair(job.Out, corpus.Options{})
	if err != nil || res.RowsLost != m.Shards[0].Rows {
		t.Fatalf("repair: %+v, %v", res, err)
	}
	sent := len(f.srv.Log())
	rep := runJob(t, job, Options{HTTPClient: runtest.InProcess})
	if n := len(f.srv.Log()) - sent; n != 0 {
		t.Errorf("the rerun sent %d requests; every one was in the cache", n)
	}
	got := runtest.ReadCorpus(t, job.Out)
	if len(got) != len(want) || rep.Problems.Done != first.Problems.Done {
		t.Errorf("after repair and rerun: %d records, %d done; want %d", len(got), rep.Problems.Done, len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("record %s lost", id)
			continue
		}
		if len(g.Rubric) != len(w.Rubric) || len(g.Rollouts) != len(w.Rollouts) {
			t.Errorf("record %s differs after being made again", id)
		}
	}
	if st, err := ReadStatus(job.Out); err != nil || len(st.Damaged) != 0 {
		t.Errorf("status after recovery: %v, %+v", err, st)
	}
}
