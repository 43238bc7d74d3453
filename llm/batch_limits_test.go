package llm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
)

// TestBatchFilesStayUnderMaxBytes: every input file a Batcher writes is
// at most BatchOptions.MaxBytes, whatever the sizes of the rows that come
// (a provider refuses a larger file, and the run stops). Rows grow here,
// and some prompts hold < and >, which a line spells \u003c and \u003e:
// a file sealed only when the row just added would not fit again went over.
func TestBatchFilesStayUnderMaxBytes(t *testing.T) {
	dir := t.TempDir()
	const maxBytes = 20_000
	offline := filepath.Join(dir, "offline")
	cache, err := cache.Open(filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	b, err := llm.NewBatcher(llm.BatchOptions{Dir: filepath.Join(dir, "batches"), MaxBytes: maxBytes, OfflineDir: offline},
		cache, llm.NewMeter(nil, llm.Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: "http://127.0.0.1:9/v1"}, llm.Options{}) // never called: the files go offline
	if err != nil {
		t.Fatal(err)
	}
	d := b.Deferrer(api)
	ctx := context.Background()
	b.Start(ctx)
	const rows = 60
	for i := range rows {
		text := strings.Repeat("x", 200+40*i)
		if i%3 == 2 {
			text = strings.Repeat("<answer>", 50+i*8)
		}
		req := llm.Request{Stage: "distill", Model: "m", Messages: []llm.Message{{Role: "user", Content: text}}}
		body, _ := json.Marshal(map[string]any{"model": req.Model, "messages": req.Messages})
		if err := d.Defer(ctx, llm.DeferredRequest{Stage: req.Stage, Model: req.Model, ID: llm.IdentityOf(req), N: 1, Body: body}); llm.ClassOf(err) != llm.ClassDeferred {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(offline, "*.input.jsonl"))
	total := 0
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > maxBytes {
			t.Errorf("%s: %d bytes, over the %d-byte limit", filepath.Base(f), fi.Size(), maxBytes)
		}
		total += countLines(t, f)
	}
	if total != rows || len(files) < 2 {
		t.Errorf("%d rows in %d files, want %d rows split over several", total, len(files), rows)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		n++
	}
	return n
}

// TestBatchRowOverMaxBytesFailsAlone: a request too large for any batch
// file fails by itself, permanently, naming the limit; it does not make a
// file the provider would refuse, and the rows around it are batched.
func TestBatchRowOverMaxBytesFailsAlone(t *testing.T) {
	dir := t.TempDir()
	offline := filepath.Join(dir, "offline")
	cache, err := cache.Open(filepath.Join(dir, "cache.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	b, err := llm.NewBatcher(llm.BatchOptions{Dir: filepath.Join(dir, "batches"), MaxBytes: 5_000, OfflineDir: offline},
		cache, llm.NewMeter(nil, llm.Budget{}))
	if err != nil {
		t.Fatal(err)
	}
	api, err := llm.NewBatchAPI(llm.Endpoint{BaseURL: "http://127.0.0.1:9/v1"}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := b.Deferrer(api)
	ctx := context.Background()
	b.Start(ctx)
	for i, size := range []int{100, 6_000, 100} {
		req := llm.Request{Stage: "distill", Model: "m", Messages: []llm.Message{{Role: "user", Content: strings.Repeat("y", size) + string(rune('a'+i))}}}
		body, _ := json.Marshal(map[string]any{"model": req.Model, "messages": req.Messages})
		err := d.Defer(ctx, llm.DeferredRequest{Stage: req.Stage, Model: req.Model, ID: llm.IdentityOf(req), N: 1, Body: body})
		want := llm.ClassDeferred
		if size > 5_000 {
			want = llm.ClassPermanent
			if err == nil || !strings.Contains(err.Error(), "5000") {
				t.Errorf("the row too large: error %v, want one naming the limit, 5000 bytes", err)
			}
		}
		if got := llm.ClassOf(err); got != want {
			t.Errorf("row %d (%d bytes): class %v, want %v (%v)", i, size, got, want, err)
		}
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(offline, "*.input.jsonl"))
	if len(files) != 1 || countLines(t, files[0]) != 2 {
		t.Errorf("files %v: want one file with the two small rows", files)
	}
}
