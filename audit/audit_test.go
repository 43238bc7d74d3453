package audit

import (
	"path/filepath"
	"testing"
)

func TestGoldenRun(t *testing.T) {
	dir := fixtureRun(t)
	rep := auditPath(t, Options{Tool: "validate test"}, dir)
	base := filepath.Dir(dir)
	golden(t, "run.txt", base, render(t, rep.WriteText))
	golden(t, "run.json", base, render(t, rep.WriteJSON))
}
