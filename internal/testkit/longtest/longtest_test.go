package longtest

import "testing"

func TestPick(t *testing.T) {
	t.Setenv(Env, "")
	if Enabled() || Pick(t, 1, 2) != 1 {
		t.Error("without the variable: want the default form")
	}
	t.Setenv(Env, "1")
	if !Enabled() || Pick(t, 1, 2) != 2 {
		t.Errorf("with %s=1: want the long form", Env)
	}
}
