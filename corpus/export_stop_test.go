package corpus

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"testing"
)

// TestFailedOrStoppedExportLeavesNoDirectory: an export into a new
// directory that fails, or is stopped (Ctrl-C), leaves no empty DIR/data
// behind; a stopped export says so (ErrExportStopped) and leaves an earlier
// export as it was.
func TestFailedOrStoppedExportLeavesNoDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	writeExportCorpus(t, "run", exportFixture(), 3)

	if _, err := Export(context.Background(), "run", quietExportOptions(FormatSRaRLines, "failed")); err == nil {
		t.Fatal("srar-lines of factual_process records succeeded")
	}
	if _, err := os.Stat("failed"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed export left its directory: %v", err)
	}

	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Export(stopped, "run", quietExportOptions(FormatRaR, "stopped"))
	if !errors.Is(err, ErrExportStopped) || !errors.Is(err, context.Canceled) {
		t.Errorf("a stopped export: %v", err)
	}
	if _, err := os.Stat("stopped"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a stopped export left its directory: %v", err)
	}

	if _, err := Export(context.Background(), "run", quietExportOptions(FormatRaR, "earlier")); err != nil {
		t.Fatal(err)
	}
	before := dirFiles(t, "earlier")
	if _, err := Export(stopped, "run", quietExportOptions(FormatVerl, "earlier")); !errors.Is(err, ErrExportStopped) {
		t.Errorf("a stopped export over an earlier one: %v", err)
	}
	if after := dirFiles(t, "earlier"); !reflect.DeepEqual(before, after) {
		t.Error("a stopped export changed the earlier export")
	}
}
