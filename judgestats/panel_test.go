package judgestats

import (
	"math/rand/v2"
	"testing"
)

func TestMajorityFailsClosed(t *testing.T) {
	yes, no, failed := Vote{OK: true, Yes: true}, Vote{OK: true}, Vote{}
	cases := []struct {
		name  string
		votes []Vote
		want  bool
	}{
		{"empty panel", nil, false},
		{"one yes", []Vote{yes}, true},
		{"one failed", []Vote{failed}, false},
		// A panel of three where one judge fails: the 1-1 split of the two
		// that answered must not become a verdict either way.
		{"1-1 split and a failure, yes first", []Vote{yes, no, failed}, false},
		{"1-1 split and a failure, failure first", []Vote{failed, yes, no}, false},
		{"2 yes and a failure", []Vote{yes, failed, yes}, true},
		{"tie of two, yes first", []Vote{yes, no}, false},
		{"tie of two, no first", []Vote{no, yes}, false},
		{"2-1", []Vote{no, yes, yes}, true},
		{"2-2", []Vote{yes, yes, no, no}, false},
		{"3-1", []Vote{yes, no, yes, yes}, true},
		{"a failed yes is no vote", []Vote{{OK: false, Yes: true}, yes, no}, false},
	}
	for _, c := range cases {
		if got := Majority(c.votes); got != c.want {
			t.Errorf("%s: Majority = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMajorityIgnoresOrder: every permutation of a panel's votes gives the
// same verdict.
func TestMajorityIgnoresOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		votes := make([]Vote, 1+r.IntN(6))
		for i := range votes {
			votes[i] = Vote{OK: r.IntN(4) > 0, Yes: r.IntN(2) == 0}
		}
		want := Majority(votes)
		for range 5 {
			r.Shuffle(len(votes), func(i, j int) { votes[i], votes[j] = votes[j], votes[i] })
			if Majority(votes) != want {
				t.Fatalf("trial %d: %v gives another verdict in another order", trial, votes)
			}
			if PanelScore(scores(votes)) != boolScore(want) {
				t.Fatalf("trial %d: PanelScore of yes/no votes %v is not Majority's %v", trial, votes, want)
			}
		}
	}
}

func scores(votes []Vote) []Score {
	out := make([]Score, len(votes))
	for i, v := range votes {
		out[i] = Score{OK: v.OK, Value: boolScore(v.Yes)}
	}
	return out
}

func boolScore(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestPanelScore(t *testing.T) {
	cases := []struct {
		name   string
		scores []Score
		want   float64
	}{
		{"empty", nil, 0},
		{"one", []Score{{true, 0.7}}, 0.7},
		{"failed alone", []Score{{false, 0.9}}, 0},
		// sorted 0.2, 0.5, 0.9: the middle one
		{"three graded", []Score{{true, 0.9}, {true, 0.2}, {true, 0.5}}, 0.5},
		// a failure counts 0: sorted 0, 0.5, 0.9
		{"failure pulls down", []Score{{true, 0.9}, {false, 1}, {true, 0.5}}, 0.5},
		// two: the lower of the two
		{"two", []Score{{true, 1}, {true, 0.25}}, 0.25},
	}
	for _, c := range cases {
		if got := PanelScore(c.scores); got != c.want {
			t.Errorf("%s: PanelScore = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestMetFailsAgainstTheResponse(t *testing.T) {
	met, notMet, failed := Vote{OK: true, Yes: true}, Vote{OK: true}, Vote{}
	cases := []struct {
		name     string
		votes    []Vote
		negative bool
		want     bool
	}{
		{"positive, 2 of 3 met", []Vote{met, met, notMet}, false, true},
		{"positive, tie", []Vote{met, notMet}, false, false},
		{"positive, a failure breaks no split", []Vote{met, notMet, failed}, false, false},
		{"positive, all failed", []Vote{failed, failed}, false, false},
		{"pitfall, 2 of 3 say absent", []Vote{notMet, notMet, met}, true, false},
		{"pitfall, tie counts it present", []Vote{met, notMet}, true, true},
		{"pitfall, a failure counts it present", []Vote{notMet, met, failed}, true, true},
		{"pitfall, all failed", []Vote{failed}, true, true},
		{"pitfall, unanimous absent", []Vote{notMet, notMet}, true, false},
	}
	for _, c := range cases {
		if got := Met(c.votes, c.negative); got != c.want {
			t.Errorf("%s: Met = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAgreedStep: the step of a panel's verdict is the earliest step named
// by a judge whose answer is the verdict, else the whole solution (0),
// else none (-1); a failed judge and a judge that said otherwise never
// give it, and no permutation of the judges changes it.
func TestAgreedStep(t *testing.T) {
	met := func(step int32) StepVote { return StepVote{Vote{OK: true, Yes: true}, step} }
	unmet := func(step int32) StepVote { return StepVote{Vote{OK: true}, step} }
	failed := func(step int32) StepVote { return StepVote{Vote{Yes: true}, step} } // what a failed judge left behind
	cases := []struct {
		name    string
		votes   []StepVote
		verdict bool
		want    int32
	}{
		{"empty panel", nil, true, -1},
		{"one judge, its step", []StepVote{met(3)}, true, 3},
		{"earliest named step", []StepVote{met(4), met(2), met(3)}, true, 2},
		{"a named step beats the whole solution", []StepVote{met(0), met(3)}, true, 3},
		{"a named step beats none", []StepVote{met(-1), met(2)}, true, 2},
		{"the whole solution beats none", []StepVote{met(-1), met(0)}, true, 0},
		{"none from every judge", []StepVote{met(-1), met(-1)}, true, -1},
		{"a dissenting judge's step is not the panel's", []StepVote{met(5), unmet(1), met(4)}, true, 4},
		{"a failed judge's step is not the panel's", []StepVote{failed(1), met(4), met(6)}, true, 4},
		{"only failed judges", []StepVote{failed(1), failed(2)}, true, -1},
		{"no judge's answer is the verdict", []StepVote{unmet(2), unmet(3)}, true, -1},
		{"unsatisfied: the judges that said not met", []StepVote{met(1), unmet(3), unmet(2)}, false, 2},
		{"unsatisfied: the whole solution", []StepVote{met(1), unmet(0), unmet(-1)}, false, 0},
		{"unsatisfied: none", []StepVote{unmet(-1), failed(1)}, false, -1},
		{"unsatisfied: a failed judge is no vote against", []StepVote{{Vote{}, 1}, unmet(5)}, false, 5},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		if got := AgreedStep(c.votes, c.verdict); got != c.want {
			t.Errorf("%s: AgreedStep = %d, want %d", c.name, got, c.want)
		}
		for range 10 {
			shuffled := append([]StepVote(nil), c.votes...)
			r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			if got := AgreedStep(shuffled, c.verdict); got != c.want {
				t.Errorf("%s, judges in order %v: AgreedStep = %d, want %d", c.name, shuffled, got, c.want)
			}
		}
	}
}
