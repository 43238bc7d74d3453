package workers

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rubricforge/rubricforge/pipeline"

	"github.com/rubricforge/rubricforge/internal/sim"
	"github.com/rubricforge/rubricforge/internal/testkit/runtest"
)

// TestWorkersStatusTable: the status of several workers is one row each
// and a total that adds up their problems and records, and names the
// partitions that are missing or held twice.
func TestWorkersStatusTable(t *testing.T) {
	t.Parallel()
	f := runtest.NewFixture(t, 30, sim.Config{})
	var dirs []string
	var done, records int64
	for i, part := range []string{"0/4", "1/4", "3/4", "3/4"} {
		job := f.Job
		job.Out = filepath.Join(f.Dir, fmt.Sprintf("part-%d", i))
		job.Partition = part
		rep := runJob(t, job, pipeline.Options{})
		dirs = append(dirs, job.Out)
		if i < 3 {
			done += rep.Problems.Done
			records += rep.CorpusRows
		}
	}
	ws, err := ReadWorkers(dirs[:3])
	if err != nil {
		t.Fatal(err)
	}
	if ws.Total.Problems.Done != done || ws.Total.Records != records || ws.Total.Statuses[pipeline.StatusFinished] != 3 {
		t.Errorf("total %+v; want %d done, %d records, 3 finished", ws.Total, done, records)
	}
	var out bytes.Buffer
	ws.WriteText(&out)
	text := out.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 6 { // header, 3 workers, total, partitions
		t.Fatalf("want a header, 3 rows, a total and the partitions:\n%s", text)
	}
	for i, part := range []string{"0/4", "1/4", "3/4"} {
		if !strings.Contains(lines[i+1], dirs[i]) || !strings.Contains(lines[i+1], part) {
			t.Errorf("row %d does not show %s and %s: %q", i+1, dirs[i], part, lines[i+1])
		}
	}
	if !strings.Contains(lines[4], "total (3 workers)") || !strings.Contains(lines[4], fmt.Sprint(done)) || !strings.Contains(lines[4], "finished") {
		t.Errorf("total row %q", lines[4])
	}
	if lines[5] != "partitions: 3 of 4; missing 2" {
		t.Errorf("partitions line %q", lines[5])
	}
	twice, err := ReadWorkers(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("3 of 4; missing 2; held twice 3 (%s, %s)", dirs[2], dirs[3]); twice.Total.Partitions != want {
		t.Errorf("partitions %q, want %q", twice.Total.Partitions, want)
	}
}
