package refine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/internal/testkit/synthcorpus"
)

// TestRunStoppedLeavesNothing: a refinement whose context ends (Ctrl-C)
// returns the context's error and leaves neither --out nor its work
// directory.
func TestRunStoppedLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := synthcorpus.Write(src, synthcorpus.Options{Records: 3000, Seed: 5, ShardRows: 500}, nil); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "refined")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{Src: src, Out: out, Options: DefaultOptions(), ShardRows: 100}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg)
		done <- err
	}()
	// Cancel once the work directory holds committed shards.
	var err error
wait:
	for {
		select {
		case err = <-done:
			t.Fatalf("Run ended (%v) before it was stopped", err)
		case <-time.After(2 * time.Millisecond):
			if m, rerr := corpus.ReadManifest(tempDir(out)); rerr == nil && len(m.Shards) >= 3 {
				cancel()
				err = <-done
				break wait
			}
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	for _, p := range []string{out, tempDir(out)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is there after a stopped refine (%v)", p, err)
		}
	}
}
