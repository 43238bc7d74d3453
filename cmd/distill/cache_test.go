package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/llm"
	"github.com/rubricforge/rubricforge/llm/cache"
)

func TestCacheCompactCommand(t *testing.T) {
	run1 := t.TempDir()
	path := filepath.Join(run1, "cache.db")
	c, err := cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		req := llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: fmt.Sprint("q", i)}}}
		value := bytes.Repeat([]byte("x"), 1000)
		for range 3 { // two of every three are dead once the third is written
			if err := c.Put(llm.IdentityOf(req), value, cache.Usage{Stage: "rollout", Model: "m"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	st, _ := os.Stat(path)
	before := st.Size()

	var stdout, stderr bytes.Buffer
	if code := run([]string{"cache", "compact", run1}, &stdout, &stderr); code != exitFailed || !strings.Contains(stderr.String(), "locked by another process") {
		t.Errorf("compacting a cache in use: exit %d, %s", code, stderr.String())
	}
	c.Close()

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"cache", "compact", run1}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := path + ": kept 10 answers and 0 unusable marks; dropped 20 dead entries (0 damaged)"; !strings.Contains(stdout.String(), want) {
		t.Errorf("output %q; want %q", stdout.String(), want)
	}
	if st, _ := os.Stat(path); st.Size() >= before/2 {
		t.Errorf("cache of %d bytes is %d after compaction", before, st.Size())
	}
	c, err = cache.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, _ := c.Len(); n != 10 {
		t.Errorf("%d answers after compaction, want 10", n)
	}
}

func TestCacheCommandUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cache"}, exitUsage, "Usage: distill cache compact RUN_DIR"},
		{[]string{"cache", "shrink"}, exitUsage, `unknown command "shrink"`},
		{[]string{"cache", "compact"}, exitUsage, "want one run directory"},
		{[]string{"cache", "compact", "-h"}, exitOK, "Example:"},
		{[]string{"cache", "compact", filepath.Join(t.TempDir(), "none")}, exitUsage, "no response cache at"},
		{[]string{"cache", "compact", t.TempDir()}, exitUsage, "no response cache at"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q; want %d and %q", tc.args, code, stdout.String()+stderr.String(), tc.code, tc.want)
		}
	}
}
