package reviewtest

import (
	"os"
	"testing"
)

func TestDemoRunWrites(t *testing.T) {
	dir := os.Getenv("REVIEWTEST_OUT")
	if dir == "" {
		dir = t.TempDir() + "/run"
	}
	if err := DemoRun(dir, 8); err != nil {
		t.Fatal(err)
	}
}
