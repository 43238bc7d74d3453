package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
	"github.com/rubricforge/rubricforge/schema"
)

func TestLockRefusesSecondOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{})
	_, err := Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	host, _ := os.Hostname()
	want := fmt.Sprintf("run directory %s is in use by another distill process (pid %d on %s since ", dir, os.Getpid(), host)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not contain %q", err, want)
	}
	closeRun(t, r)
	r2 := openRun(t, dir, Options{})
	closeRun(t, r2)
}

func TestLockReleasedWhenHolderDies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := waitLine(ctx, stdout); err != nil || line != "locked" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}

	_, err = Open(dir, Options{Logger: quietLogger()})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d ", cmd.Process.Pid)) {
		t.Errorf("Open while the helper holds the lock: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	r := openRun(t, dir, Options{})
	closeRun(t, r)
}

// crashedRun leaves dir as a crash between a shard's rename and its manifest
// write would: shards 0 and 1 committed, shard 2 renamed but not listed.
func crashedRun(t *testing.T, dir string) (all []schema.Record) {
	t.Helper()
	r := openRun(t, dir, Options{ShardRows: 20})
	all = genRecords(8, 0, 60)
	appendAll(t, r, all[:40])
	before, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	appendAll(t, r, all[40:])
	closeRun(t, r)
	if err := os.WriteFile(filepath.Join(dir, ManifestName), before, 0o644); err != nil {
		t.Fatal(err)
	}
	return all
}

func TestResumeAdoptsUnlistedShard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	all := crashedRun(t, dir)
	r := openRun(t, dir, Options{ShardRows: 20})
	defer closeRun(t, r)
	if r.DoneCount() != len(all) {
		t.Errorf("done %d, want %d", r.DoneCount(), len(all))
	}
	for _, rec := range all {
		if !r.Done(rec.ID) {
			t.Fatalf("%s not done", rec.ID)
		}
	}
	m, err := ReadManifest(dir) // adoption is written at once
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 3 || m.Rows != 60 || m.Shards[2].File != "shards/part-00002.parquet" {
		t.Errorf("manifest after adoption: %d shards, %d rows, %+v", len(m.Shards), m.Rows, m.Shards)
	}
}

func TestResumeMovesBrokenShardAsideAndNeverReusesIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crashedRun(t, dir)
	// Shard 2 (unlisted) is damaged; a stale temp file and a stray file lie around.
	p2 := shardPath(dir, 2)
	data, err := os.ReadFile(p2)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p2, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, shardsDir, shardTmpName(3))
	if err := os.WriteFile(tmp, []byte("half a shard"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := openRun(t, dir, Options{ShardRows: 20})
	if r.DoneCount() != 40 {
		t.Errorf("done %d, want 40", r.DoneCount())
	}
	if _, err := os.Stat(filepath.Join(dir, shardsDir, brokenDir, shardName(2))); err != nil {
		t.Errorf("broken shard not moved aside: %v", err)
	}
	for _, gone := range []string{p2, tmp} {
		if _, err := os.Stat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still present: %v", gone, err)
		}
	}
	appendAll(t, r, genRecords(9, 1000, 5))
	closeRun(t, r)
	m := r.Manifest()
	if last := m.Shards[len(m.Shards)-1].File; last != "shards/part-00003.parquet" {
		t.Errorf("new shard is %s, want part-00003 (index 2 is spent)", last)
	}

	// Even with shard 3 gone from disk and manifest, index 3 is not reused
	// while broken/ remembers 2; after a restart, the next index is 3 or more.
	r2 := openRun(t, dir, Options{})
	appendAll(t, r2, genRecords(9, 2000, 1))
	closeRun(t, r2)
	m2 := r2.Manifest()
	if last := m2.Shards[len(m2.Shards)-1].File; last != "shards/part-00004.parquet" {
		t.Errorf("after restart new shard is %s, want part-00004", last)
	}
}

func TestResumeListedShardProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		wantErr string // "" = Open succeeds
	}{
		{
			name: "wrong hash, unreadable file",
			damage: func(t *testing.T, dir string) {
				p := shardPath(dir, 1)
				data, _ := os.ReadFile(p)
				data[len(data)-10] ^= 0xff // inside the footer length / footer
				os.WriteFile(p, data, 0o644)
			},
			wantErr: "shards/part-00001.parquet (20 records): unreadable",
		},
		{
			name: "truncated",
			damage: func(t *testing.T, dir string) {
				p := shardPath(dir, 0)
				st, _ := os.Stat(p)
				os.Truncate(p, st.Size()-100)
			},
			wantErr: "shards/part-00000.parquet (20 records): ",
		},
		{
			name:    "missing",
			damage:  func(t *testing.T, dir string) { os.Remove(shardPath(dir, 1)) },
			wantErr: "shards/part-00001.parquet (20 records): missing",
		},
		{
			name: "corrupt manifest",
			damage: func(t *testing.T, dir string) {
				os.WriteFile(filepath.Join(dir, ManifestName), []byte(`{"shards": [`), 0o644)
			},
			wantErr: ManifestName + " is corrupt",
		},
		{
			// Either side may be wrong; neither is believed.
			name: "wrong hash in manifest, file intact: damaged",
			damage: func(t *testing.T, dir string) {
				m, err := ReadManifest(dir)
				if err != nil {
					t.Fatal(err)
				}
				m.Shards[0].XXHash64 = "0123456789abcdef"
				writeManifestForTest(t, dir, m)
			},
			wantErr: "shards/part-00000.parquet (20 records): its bytes changed on disk",
		},
		{
			name: "modification time changed, bytes intact: re-listed",
			damage: func(t *testing.T, dir string) {
				later := time.Now().Add(time.Hour)
				if err := os.Chtimes(shardPath(dir, 0), later, later); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			r := openRun(t, dir, Options{ShardRows: 20})
			appendAll(t, r, genRecords(10, 0, 40))
			closeRun(t, r)
			want := r.Manifest()
			tt.damage(t, dir)

			r2, err := Open(dir, Options{ShardRows: 20, Logger: quietLogger()})
			if tt.wantErr != "" {
				if err == nil {
					r2.Close()
					t.Fatal("Open succeeded")
				}
				if !strings.Contains(err.Error(), tt.wantErr) && !strings.Contains(err.Error(), filepath.Join(dir, tt.wantErr)) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer closeRun(t, r2)
			got, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Shards[0].XXHash64 != want.Shards[0].XXHash64 || r2.DoneCount() != 40 {
				t.Errorf("re-listed hash %s, want %s; done %d", got.Shards[0].XXHash64, want.Shards[0].XXHash64, r2.DoneCount())
			}
		})
	}
}

func writeManifestForTest(t *testing.T, dir string, m Manifest) {
	t.Helper()
	r := &Run{dir: dir, layout: Layout{Dir: dir}, fs: fsys.OS, man: m, opt: Options{ToolVersion: m.ToolVersion}}
	if err := r.writeManifest(); err != nil {
		t.Fatal(err)
	}
}

func TestFailuresLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{})
	recs := genRecords(11, 0, 2)
	fails := []Failure{
		{ID: recs[0].ID, Stage: "rollout", Reason: "timeout", Attempts: 3},
		{ID: "p2", Stage: "distill", Reason: "unparseable rubric", Attempts: 1, Source: "math"},
		{ID: "p2", Stage: "judge", Reason: "429 after retries", Attempts: 5},
	}
	for _, f := range fails {
		if err := r.RecordFailure(f); err != nil {
			t.Fatal(err)
		}
	}
	appendAll(t, r, recs[:1]) // p0 later succeeded
	got := r.Failures()
	if len(got) != 1 || got["p2"].Stage != "judge" || got["p2"].Time.IsZero() || got["p2"].Reason != "429 after retries" {
		t.Errorf("Failures() = %+v; want only p2's latest (judge) with a time", got)
	}
	if st, ok := r.Failed("p2"); !ok || st != (FailureState{Stage: "judge"}) {
		t.Errorf("Failed(p2) = %+v %v; want its latest stage", st, ok)
	}
	if st, ok := r.Failed(recs[0].ID); ok {
		t.Errorf("Failed(%s) = %+v; want none: it is done", recs[0].ID, st)
	}
	closeRun(t, r)

	path := filepath.Join(dir, FailuresName)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"id":"p3","stage":"rol`) // torn by a crash
	f.Close()

	r2 := openRun(t, dir, Options{})
	if got := r2.Failures(); len(got) != 1 || got["p2"].Stage != "judge" {
		t.Errorf("after torn line: %+v", got)
	}
	if err := r2.RecordFailure(Failure{ID: "p4", Stage: "verify", Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	closeRun(t, r2)
	r3 := openRun(t, dir, Options{}) // the torn bytes are gone, p4 is on its own line
	if got := r3.Failures(); len(got) != 2 || got["p4"].Stage != "verify" || got["p2"].Reason != "429 after retries" {
		t.Errorf("after repair and append: %+v", got)
	}
	if st, ok := r3.Failed("p2"); !ok || st != (FailureState{Stage: "judge"}) {
		t.Errorf("after compaction, Failed(p2) = %+v %v; want its latest stage", st, ok)
	}
	closeRun(t, r3)

}

func TestParseFailureLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		in                 string
		want               int
		good               int64
		torn, unterminated bool
		bad                int
	}{
		{name: "empty", in: ""},
		{name: "two lines", in: "{\"id\":\"a\"}\n{\"id\":\"b\"}\n", want: 2, good: 22},
		{name: "blank lines", in: "\n{\"id\":\"a\"}\n\n", want: 1, good: 13},
		{name: "torn", in: "{\"id\":\"a\"}\n{\"id\":\"b", want: 1, good: 11, torn: true},
		{name: "unterminated", in: "{\"id\":\"a\"}", want: 1, good: 10, unterminated: true},
		{name: "bad middle", in: "{\"id\":\"a\"}\nnope\n{\"id\":\"b\"}\n", want: 2, good: 27, bad: 1},
		{name: "bad last but terminated", in: "{\"id\":\"a\"}\nnope\n", want: 1, good: 16, bad: 1},
		{name: "no id", in: "{\"stage\":\"x\"}\n", good: 14, bad: 1},
		{name: "trailing data", in: "{\"id\":\"a\"}}\n", good: 12, bad: 1},
		{name: "array line", in: "[{\"id\":\"a\"}]\n{\"id\":\"b\"}\n", want: 1, good: 24, bad: 1},
		{name: "torn middle then good", in: "{\"id\":\"a\"}\n{\"id\":\"b{\"id\":\"c\"}\n{\"id\":\"d\"}\n", want: 2, good: 41, bad: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fl, err := parseFailureLog("f", strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(fl.entries) != tt.want || fl.good != tt.good || fl.torn != tt.torn || fl.unterminated != tt.unterminated || fl.bad != tt.bad {
				t.Errorf("got %d entries good=%d torn=%v unterminated=%v bad=%d", len(fl.entries), fl.good, fl.torn, fl.unterminated, fl.bad)
			}
			if tt.bad > 0 && !strings.HasPrefix(fl.firstBad, "f line ") {
				t.Errorf("firstBad = %q, want it to name the file and line", fl.firstBad)
			}
		})
	}
}

func FuzzParseFailureLog(f *testing.F) {
	for _, s := range []string{"", "{\"id\":\"a\"}\n", "{\"id\":\"a\"}\n{\"id", "\n\n", "{\"id\":\"a\",\"time\":\"2026-01-01T00:00:00Z\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := parseFailureLog("f", strings.NewReader(string(data)))
		if err != nil {
			t.Fatalf("a failures log must never be rejected: %v", err)
		}
		if fl.good < 0 || fl.good > int64(len(data)) {
			t.Fatalf("good prefix %d outside 0..%d", fl.good, len(data))
		}
		// The good prefix must parse to the same entries, cleanly.
		again, err := parseFailureLog("f", strings.NewReader(string(data[:fl.good])))
		if err != nil || again.torn || len(again.entries) != len(fl.entries) || again.bad != fl.bad {
			t.Fatalf("re-parse of good prefix: %d entries torn=%v err=%v; first parse %d", len(again.entries), again.torn, err, len(fl.entries))
		}
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"spec_version":"1","shards":[],"rows":0}`))
	f.Add([]byte(`{"spec_version":"1","shards":[{"file":"shards/part-00000.parquet","rows":3,"bytes":10,"xxhash64":"0123456789abcdef","first_id":"a","last_id":"c"}],"rows":3}`))
	f.Add([]byte(`{"shards":[{"file":"../etc/passwd"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseManifest("m", data)
		if err != nil {
			return
		}
		var rows int64
		for _, s := range m.Shards {
			if !strings.HasPrefix(s.File, "shards/part-") || strings.Contains(s.File, "..") {
				t.Fatalf("accepted shard path %q", s.File)
			}
			rows += s.Rows
		}
		if rows != m.Rows {
			t.Fatalf("accepted rows %d != %d", m.Rows, rows)
		}
	})
}

// TestFailureLinesStayReadable: a failure's reason keeps <, > and & as
// written (no \u003c), and a line that is a JSON array says it expected an
// object.
func TestFailureLinesStayReadable(t *testing.T) {
	t.Parallel()
	line, err := encodeFailure(Failure{ID: "a", Stage: "distill", Reason: "missing <<ANSWER>> line & more"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte("<<ANSWER>> line & more")) {
		t.Errorf("encoded failure escapes the reason: %s", line)
	}
	if _, err := parseFailureLine([]byte(`[{"id":"a"}]`)); err == nil || !strings.Contains(err.Error(), "expected an object, found an array") {
		t.Errorf("an array line: %v", err)
	}
}

// TestResumeRemovesStaleStateTemps: the temporary files a killed writer
// of the run's state files left (each writer makes its own, so none is
// reused) are removed when the run opens; other files stay.
func TestResumeRemovesStaleStateTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	crashedRun(t, dir)
	stale := []string{fsys.TempPath(filepath.Join(dir, ManifestName)), fsys.TempPath(filepath.Join(dir, ReportName)),
		fsys.TempPath(filepath.Join(dir, FailuresName))}
	kept := filepath.Join(dir, ".notes.tmp")
	for _, p := range append(stale, kept) {
		if err := os.WriteFile(p, []byte("half"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	closeRun(t, openRun(t, dir, Options{}))
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a file not the run's was removed: %v", err)
	}
}
