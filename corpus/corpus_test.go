package corpus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rubricforge/rubricforge/schema"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                    string
		n, shardRows, groupRows int
		commitEvery             int // extra Commit calls; 0 = none
		wantShards              int
	}{
		// 105 records or more meet every combination of genRecord's
		// optional fields (i mod 3, 5 and 7).
		{name: "one shard", n: 140, shardRows: 1000, groupRows: 64, wantShards: 1},
		{name: "several shards, odd row groups", n: 120, shardRows: 20, groupRows: 7, wantShards: 6},
		{name: "checkpoints", n: 95, shardRows: 40, groupRows: 16, commitEvery: 30, wantShards: 4},
		{name: "one row", n: 1, shardRows: 10, groupRows: 1, wantShards: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			recs := genRecords(1, 0, tt.n)
			r := openRun(t, dir, Options{ShardRows: tt.shardRows, RowGroupRows: tt.groupRows, ToolVersion: "v-test"})
			for i := range recs {
				if err := r.Append(&recs[i]); err != nil {
					t.Fatal(err)
				}
				if !r.Done(recs[i].ID) {
					t.Fatalf("Done(%s) false right after Append", recs[i].ID)
				}
				if tt.commitEvery > 0 && (i+1)%tt.commitEvery == 0 {
					if err := r.Commit(); err != nil {
						t.Fatal(err)
					}
				}
			}
			closeRun(t, r)

			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Shards) != tt.wantShards {
				t.Errorf("shards = %d, want %d", len(m.Shards), tt.wantShards)
			}
			got := readAll(t, dir)
			if len(got) != len(recs) {
				t.Fatalf("read %d records, wrote %d", len(got), len(recs))
			}
			byID := make(map[string]schema.Record, len(got))
			for _, g := range got {
				byID[g.ID] = g
			}
			for _, want := range recs {
				g, ok := byID[want.ID]
				if !ok {
					t.Fatalf("record %s missing", want.ID)
				}
				if !reflect.DeepEqual(g, stored(want)) {
					t.Fatalf("record %s differs:\n got %+v\nwant %+v", want.ID, g, stored(want))
				}
			}
			for _, s := range m.Shards {
				checkShardLayout(t, dir, s, tt.groupRows)
			}
		})
	}
}

// checkShardLayout checks sorting, row groups and file metadata of a shard.
func checkShardLayout(t *testing.T, dir string, s ShardInfo, groupRows int) {
	t.Helper()
	path := filepath.Join(dir, s.File)
	var ids []string
	if err := ScanShard(path, func(rec *schema.Record) error {
		ids = append(ids, rec.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(ids) || ids[0] != s.FirstID || ids[len(ids)-1] != s.LastID || int64(len(ids)) != s.Rows {
		t.Errorf("%s: %d ids sorted=%v %s..%s; manifest %d %s..%s", s.File, len(ids), slices.IsSorted(ids),
			ids[0], ids[len(ids)-1], s.Rows, s.FirstID, s.LastID)
	}
	pf := openTestParquet(t, path)
	wantGroups := (len(ids) + groupRows - 1) / groupRows
	if got := len(pf.RowGroups()); got != wantGroups {
		t.Errorf("%s: %d row groups, want %d", s.File, got, wantGroups)
	}
	for i, rg := range pf.RowGroups() {
		if rg.NumRows() > int64(groupRows) {
			t.Errorf("%s: row group %d has %d rows > %d", s.File, i, rg.NumRows(), groupRows)
		}
	}
	for key, want := range map[string]string{"spec_version": schema.SpecVersion, "tool_version": "v-test"} {
		if got, _ := pf.Lookup(key); got != want {
			t.Errorf("%s: metadata %s = %q, want %q", s.File, key, got, want)
		}
	}
	if cb := pf.Metadata().CreatedBy; !strings.HasPrefix(cb, "rubricforge version v-test") {
		t.Errorf("%s: created_by = %q", s.File, cb)
	}
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			if c.MetaData.Codec != format.Zstd {
				t.Fatalf("%s: column %v codec %v, want zstd", s.File, c.MetaData.PathInSchema, c.MetaData.Codec)
			}
		}
	}
}

func openTestParquet(t *testing.T, path string) *parquet.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

func TestLongTextColumnsHaveNoStatistics(t *testing.T) {
	t.Parallel()
	long := map[string]bool{}
	for _, c := range longTextColumns() {
		long[strings.Join(c, ".")] = true
	}
	// Every configured path must name a real leaf column, or the option is a no-op.
	leaves := map[string]bool{}
	for _, c := range recordSchema().Columns() {
		leaves[strings.Join(c, ".")] = true
	}
	for p := range long {
		if !leaves[p] {
			t.Fatalf("long text column %q is not a leaf of the record schema", p)
		}
	}

	dir := t.TempDir()
	r := openRun(t, dir, Options{RowGroupRows: 50})
	appendAll(t, r, genRecords(2, 0, 120))
	closeRun(t, r)
	m := r.Manifest()
	path := filepath.Join(dir, m.Shards[0].File)
	pf := openTestParquet(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, rg := range pf.Metadata().RowGroups {
		for _, c := range rg.Columns {
			p := strings.Join(c.MetaData.PathInSchema, ".")
			st := c.MetaData.Statistics
			page := firstPageStatistics(t, data, c.MetaData)
			if long[p] {
				seen[p] = true
				if len(st.MinValue)+len(st.MaxValue)+len(st.Min)+len(st.Max) > 0 {
					t.Errorf("column %s: footer holds min/max (%d+%d bytes)", p, len(st.MinValue), len(st.MaxValue))
				}
				if len(page.MinValue)+len(page.MaxValue)+len(page.Min)+len(page.Max) > 0 {
					t.Errorf("column %s: page header holds min/max", p)
				}
			} else if p == "id" && (len(st.MinValue) == 0 || len(page.MinValue) == 0) {
				t.Errorf("column id should keep its statistics (footer %d, page %d bytes)", len(st.MinValue), len(page.MinValue))
			}
		}
	}
	if len(seen) != len(long) {
		t.Errorf("saw long columns %v, want %v", seen, long)
	}
	idx := pf.ColumnIndexes()
	for i, ci := range idx {
		for _, v := range append(slices.Clone(ci.MinValues), ci.MaxValues...) {
			if len(v) > 16 {
				t.Errorf("column index %d holds a %d-byte bound", i, len(v))
			}
		}
	}
}

// firstPageStatistics decodes the header of a column chunk's first data page.
func firstPageStatistics(t *testing.T, file []byte, md format.ColumnMetaData) format.Statistics {
	t.Helper()
	off := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < off {
		off = md.DictionaryPageOffset
	}
	r := bytes.NewReader(file[off:])
	for {
		var h format.PageHeader
		if err := thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(r)).Decode(&h); err != nil {
			t.Fatalf("decoding page header of %v: %v", md.PathInSchema, err)
		}
		switch {
		case h.DataPageHeaderV2.Valid:
			return h.DataPageHeaderV2.V.Statistics
		case h.DataPageHeader.Valid:
			return h.DataPageHeader.V.Statistics
		}
		if _, err := r.Seek(int64(h.CompressedPageSize), io.SeekCurrent); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAppendRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{})
	recs := genRecords(3, 0, 2)
	appendAll(t, r, recs)
	if err := r.Append(&recs[0]); !errors.Is(err, ErrDuplicate) {
		t.Errorf("second Append of %s: %v, want ErrDuplicate", recs[0].ID, err)
	}
	bad := []struct {
		name string
		edit func(*schema.Record)
	}{
		{"empty id", func(r *schema.Record) { r.ID = "" }},
		{"zero time", func(r *schema.Record) { r.Provenance.CreatedAt = time.Time{} }},
		{"bad utf-8 in rollout", func(r *schema.Record) {
			r.Rollouts = []schema.Rollout{{Text: "ok \xff\xfe"}}
		}},
	}
	for i, b := range bad {
		rec := genRecords(4, 100+i, 1)[0]
		b.edit(&rec)
		if err := r.Append(&rec); err == nil {
			t.Errorf("%s: Append accepted it", b.name)
		}
	}
	if got := r.Buffered(); got != 2 {
		t.Errorf("Buffered = %d, want 2", got)
	}
	closeRun(t, r)
	if err := r.Append(&recs[1]); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	if err := r.Commit(); !errors.Is(err, ErrClosed) {
		t.Errorf("Commit after Close: %v, want ErrClosed", err)
	}
}

func TestTimeIsStoredAtMillisecondsUTC(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{})
	rec := genRecords(5, 0, 1)[0]
	loc := time.FixedZone("X", 5*3600)
	rec.Provenance.CreatedAt = time.Date(2026, 3, 4, 5, 6, 7, 891_234_567, loc)
	appendAll(t, r, []schema.Record{rec})
	closeRun(t, r)
	got := readAll(t, dir)[0].Provenance.CreatedAt
	want := time.Date(2026, 3, 4, 0, 6, 7, 891_000_000, time.UTC)
	if !got.Equal(want) || got.Location() != time.UTC {
		t.Errorf("created_at = %v, want %v", got, want)
	}
}

func TestManifestCountsAndFingerprint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{ShardRows: 30})
	r.SetFingerprint("fp-1")
	appendAll(t, r, genRecords(6, 0, 100))
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	r.SetFingerprint("fp-2")
	if err := r.Commit(); err != nil { // nothing buffered: still writes the manifest
		t.Fatal(err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.JobFingerprint != "fp-2" {
		t.Errorf("fingerprint on disk = %q, want fp-2", m.JobFingerprint)
	}
	var sum int64
	for _, s := range m.Shards {
		sum += s.Rows
	}
	if sum != m.Rows || m.Rows != 100 || r.DoneCount() != 100 || len(m.Shards) != 4 {
		t.Errorf("shard rows sum %d, manifest rows %d, done %d, shards %d; want 100,100,100,4",
			sum, m.Rows, r.DoneCount(), len(m.Shards))
	}
	if !reflect.DeepEqual(m.Shards, r.Manifest().Shards) {
		t.Errorf("Manifest() differs from disk")
	}
	closeRun(t, r)

	r2 := openRun(t, dir, Options{ShardRows: 30})
	defer closeRun(t, r2)
	if r2.DoneCount() != 100 || r2.Manifest().JobFingerprint != "fp-2" {
		t.Errorf("after reopen: done %d, fingerprint %q", r2.DoneCount(), r2.Manifest().JobFingerprint)
	}
}

// TestManifestAtFirstCommit: Open and Close of a new run directory write no
// manifest (a start that fails leaves none behind); the first Commit writes
// one, even with no records.
func TestManifestAtFirstCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := openRun(t, dir, Options{})
	r.SetFingerprint("fp")
	closeRun(t, r)
	if _, err := ReadManifest(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open+Close of a new directory left a manifest: %v", err)
	}
	r = openRun(t, dir, Options{})
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	closeRun(t, r)
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Rows != 0 || len(m.Shards) != 0 || m.SpecVersion != schema.SpecVersion {
		t.Errorf("manifest = %+v", m)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ManifestName))
	if !bytes.Contains(raw, []byte(`"shards": []`)) {
		t.Errorf("empty shard list not written as []: %s", raw)
	}
}

func TestScanShardRejectsBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeOneShard(t, dir, 7, 40)
	other := filepath.Join(dir, "other.parquet")
	type row struct {
		ID string `parquet:"id"`
	}
	if err := parquet.WriteFile(other, []row{{ID: "a"}}); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"truncated":    string(good[:len(good)/2]),
		"garbage":      "PAR1 this is not parquet",
		"empty":        "",
		"bad footer":   string(good[:len(good)-12]) + "xxxxxxxxPAR1",
		"other schema": "",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := other
			if name != "other schema" {
				path = filepath.Join(t.TempDir(), "x.parquet")
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			err := ScanShard(path, func(*schema.Record) error { n++; return nil })
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("ScanShard: err %v after %d rows; want an error naming the file", err, n)
			}
		})
	}
	stop := errors.New("stop")
	if err := ScanShard(shardPath(dir, 0), func(*schema.Record) error { return stop }); err != stop {
		t.Errorf("callback error came back as %v", err)
	}
}

func FuzzScanShard(f *testing.F) {
	dir := f.TempDir()
	r, err := Open(dir, Options{RowGroupRows: 2, Logger: quietLogger()})
	if err != nil {
		f.Fatal(err)
	}
	recs := genRecords(12, 0, 5)
	for i := range recs {
		if err := r.Append(&recs[i]); err != nil {
			f.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(shardPath(dir, 0))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	for _, at := range []int{4, 100, len(good) / 2, len(good) - 40} {
		bad := slices.Clone(good)
		bad[at] ^= 0x5a
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x.parquet")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := ScanShard(path, func(*schema.Record) error { n++; return nil }); err == nil && n == 0 {
			t.Fatal("a shard without rows scanned cleanly")
		}
	})
}

func TestCheckCompactStruct(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := writeOneShard(t, dir, 13, 3)
	n := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	footer := data[len(data)-8-n : len(data)-8]

	deep := bytes.Repeat([]byte{0x1c}, 100) // struct field inside struct field ...
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"real footer", footer, true},
		{"empty struct", []byte{0x00}, true},
		{"huge list", []byte{0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00}, false},
		{"huge string", []byte{0x18, 0xff, 0xff, 0xff, 0xff, 0x07, 'a', 0x00}, false},
		{"huge map", []byte{0x1b, 0xff, 0xff, 0xff, 0x7f, 0x88, 0x00}, false},
		{"too deep", append(deep, bytes.Repeat([]byte{0}, 101)...), false},
		{"truncated", footer[:len(footer)/2], false},
		{"unknown type", []byte{0x1e, 0x00}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkCompactStruct(tt.in); (err == nil) != tt.ok {
				t.Errorf("checkCompactStruct: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestCloseCompactsFailures: once a failed problem is done, or failed again,
// its old lines leave failures.jsonl at Close, so the log holds exactly one
// line per problem that is still failed.
func TestCloseCompactsFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := Open(dir, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Failure{
		{ID: "a", Stage: "rollout", Reason: "timeout", Transient: true},
		{ID: "b", Stage: "distill", Reason: "parse"},
		{ID: "c", Stage: "judge", Reason: "first"},
	} {
		if err := r.RecordFailure(f); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()

	r, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := genRecords(1, 0, 1)[0]
	rec.ID = "a"
	if err := r.Append(&rec); err != nil {
		t.Fatal(err)
	}
	if err := r.RecordFailure(Failure{ID: "c", Stage: "judge", Reason: "second"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FailuresName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":"b"`) || !strings.Contains(lines[1], `"second"`) {
		t.Errorf("failures.jsonl after compaction:\n%s", b)
	}

	// A run with nothing superseded leaves the log alone.
	st, _ := os.Stat(filepath.Join(dir, FailuresName))
	r, _ = Open(dir, Options{})
	r.Close()
	st2, _ := os.Stat(filepath.Join(dir, FailuresName))
	if !st2.ModTime().Equal(st.ModTime()) {
		t.Error("an unchanged failures log was rewritten")
	}
}

// writeOneShard commits n generated records (seed) as the first shard of dir
// and returns the shard's bytes.
func writeOneShard(t *testing.T, dir string, seed uint64, n int) []byte {
	t.Helper()
	r := openRun(t, dir, Options{})
	appendAll(t, r, genRecords(seed, 0, n))
	closeRun(t, r)
	b, err := os.ReadFile(shardPath(dir, 0))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
