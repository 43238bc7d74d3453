package audit

import (
	"context"
	"fmt"
	"slices"

	"github.com/rubricforge/rubricforge/corpus"
	"github.com/rubricforge/rubricforge/judgestats"
	"github.com/rubricforge/rubricforge/schema"
)

// Where a judge error rate comes from (Discrimination.JudgeErrorFrom).
const (
	JudgeErrorGiven   = "given"
	JudgeErrorPanel   = "panel"
	JudgeErrorDefault = "default"
)

// panelSetting is the job history's setting naming the empirical stage's
// panel, and its value when there was none (job's fingerprint settings).
const (
	panelSetting = "empirical.panel"
	noPanel      = "no panel"
)

// satisfactionPanel reports whether a job of the run judged satisfaction
// with a panel.
func satisfactionPanel(m corpus.Manifest) bool {
	return slices.ContainsFunc(m.Jobs, func(j corpus.JobEntry) bool {
		v, ok := j.Settings[panelSetting]
		return ok && v != "" && v != noPanel
	})
}

// SatisfactionJudgeError is the error rate of the satisfaction verdicts a
// corpus stores, measured from its panels: every pair of judges' share of
// disagreements over the verdicts both gave (a failed judge's left out)
// gives each judge's rate (judgestats.PanelErrors), and the panel's strict
// majority errs as judgestats.MajorityError says. ok is false when no
// record has a satisfaction panel of two judges or more. The corpus's
// satisfaction panels are read once more for it (of a Parquet file, those
// columns alone).
func SatisfactionJudgeError(ctx context.Context, in *Input) (rate float64, ok bool, err error) {
	t := &panelTally{index: map[string]int{}}
	for _, f := range in.Files {
		_, err := scanFile(f, in.Format, func(*schema.Label, string) satisfactionVerdicts { return satisfactionVerdicts{} },
			func(r *satisfactionVerdicts, _ int64) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				if r.Panel != nil {
					for _, rv := range r.Panel.Satisfaction {
						t.add(rv)
					}
				}
				return nil
			}, func(Problem) {})
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		} else {
			err = fmt.Errorf("reading %s: %w", f.Path, err)
		}
		return 0, false, fmt.Errorf("measuring the judge error rate from the panels: %w", err)
	}
	return t.rate()
}

// satisfactionVerdicts is what SatisfactionJudgeError reads of a record: its
// empirical stage's panel verdicts (a verl export's rows have none).
type satisfactionVerdicts struct {
	Panel *struct {
		Satisfaction []schema.RolloutVerdicts `parquet:"satisfaction,list" json:"satisfaction"`
	} `parquet:"panel,optional" json:"panel"`
}

// panelTally counts, for every pair of judges, the verdicts both gave and
// those on which they differ.
type panelTally struct {
	index       map[string]int
	both, apart [][]int64
}

func (t *panelTally) judge(name string) int {
	i, ok := t.index[name]
	if !ok {
		i = len(t.index)
		t.index[name] = i
		for k := range t.both {
			t.both[k], t.apart[k] = append(t.both[k], 0), append(t.apart[k], 0)
		}
		t.both, t.apart = append(t.both, make([]int64, i+1)), append(t.apart, make([]int64, i+1))
	}
	return i
}

func (t *panelTally) add(rv schema.RolloutVerdicts) {
	for a, ja := range rv.Judges {
		for _, jb := range rv.Judges[a+1:] {
			if ja.Failed || jb.Failed || len(ja.Satisfaction) != len(jb.Satisfaction) {
				continue
			}
			i, j := t.judge(ja.Judge), t.judge(jb.Judge)
			for k, v := range ja.Satisfaction {
				if w := jb.Satisfaction[k]; w.ID == v.ID {
					t.both[i][j]++
					t.both[j][i]++
					if w.Satisfied != v.Satisfied {
						t.apart[i][j]++
						t.apart[j][i]++
					}
				}
			}
		}
	}
}

func (t *panelTally) rate() (float64, bool, error) {
	n := len(t.index)
	dis := make([][]float64, n)
	for i := range n {
		dis[i] = make([]float64, n)
		for j := range n {
			if i == j {
				continue
			}
			if t.both[i][j] == 0 {
				return 0, false, nil
			}
			dis[i][j] = float64(t.apart[i][j]) / float64(t.both[i][j])
		}
	}
	e, ok := judgestats.PanelErrors(dis)
	if !ok {
		return 0, false, nil
	}
	return judgestats.MajorityError(e), true, nil
}
