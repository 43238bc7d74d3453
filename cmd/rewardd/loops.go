package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/rubricforge/rubricforge/cmd/rewardd/internal/server"
	"github.com/rubricforge/rubricforge/livestate"
	"github.com/rubricforge/rubricforge/reward"
)

// liveOptions are the flags of the live rubric (--state-dir) and of
// elicitation.
type liveOptions struct {
	stateDir, replica, splitState string
	set                           livestate.Settings
	elicit                        server.ElicitOptions
	elicitPrice                   string
	elicitOn                      bool
	apiKey                        string // the judge's key; never logged
}

// liveFlags are the flags of the training-time loops' state.
func (o *options) liveFlags(fs *flag.FlagSet) {
	l := &o.live
	l.set = livestate.DefaultSettings()
	fs.StringVar(&l.stateDir, "state-dir", "", "`DIR` of the live rubric: per problem and item, the satisfaction and its correlation with correctness over the problem's recent groups (/v1/score_group), the items retired and admitted, the rubric's version; an append-only log fsynced before each group is answered, reloaded on restart; shared by replicas that each have their own --replica-id (e.g. --state-dir runs/math16k-live)")
	fs.StringVar(&l.replica, "replica-id", "default", "this rewardd's name among the replicas sharing --state-dir: its log is DIR/NAME.log, and a problem it sees first is claimed for it; send each problem's groups to one replica (e.g. --replica-id rm-0)")
	fs.StringVar(&l.splitState, "split-state", server.SplitStateRefuse, "what a group of a problem another replica of --state-dir keeps gets: refuse (409 naming that replica) or warn (scored with the corpus's rubric, not recorded, a warning logged) (e.g. --split-state warn)")
	fs.BoolVar(&l.set.RetireSaturated, "retire-saturated", false, "stop paying an item the window's responses meet (satisfy, or avoid a PITFALL) at --saturation or more, over at least --stats-min-rollouts of them, and pay it again below --reinstate-below; needs --state-dir")
	fs.IntVar(&l.set.Window, "stats-window", l.set.Window, "groups of a problem the live statistics cover, the most recent ones (e.g. --stats-window 32)")
	fs.IntVar(&l.set.MinRollouts, "stats-min-rollouts", l.set.MinRollouts, "judged on-policy responses in the window before an item can be called saturated or reinstated (e.g. --stats-min-rollouts 64)")
	fs.Float64Var(&l.set.Saturation, "saturation", l.set.Saturation, "share of the window's responses meeting an item at which it is saturated (e.g. --saturation 0.98)")
	fs.Float64Var(&l.set.Reinstate, "reinstate-below", l.set.Reinstate, "share below which a retired item is paid again, below --saturation so that an item does not flap (e.g. --reinstate-below 0.8)")
	o.elicitFlags(fs)
}

// checkLive reports the live flags' problems.
func (o *options) checkLive(set map[string]bool) []error {
	l := &o.live
	var errs []error
	l.set.Alpha, l.set.PenaltyCorr = o.params.Alpha, o.params.PenaltyCorr
	l.set.AdmitGroups, l.set.MaxAdmitted = l.elicit.AdmitGroups, l.elicit.MaxPerProblem
	if l.stateDir == "" {
		for _, f := range []string{"replica-id", "split-state", "retire-saturated", "stats-window", "stats-min-rollouts", "saturation", "reinstate-below", "elicit"} {
			if set[f] {
				errs = append(errs, fmt.Errorf("--%s needs --state-dir, where the live rubric is kept", f))
			}
		}
		return errs
	}
	if l.splitState != server.SplitStateRefuse && l.splitState != server.SplitStateWarn {
		errs = append(errs, fmt.Errorf("--split-state %q is not refuse or warn", l.splitState))
	}
	if err := l.set.Check(); err != nil {
		errs = append(errs, fmt.Errorf("the live rubric's flags: %w", err))
	}
	return append(errs, o.checkElicit()...)
}

// openLive opens the state directory; nil without --state-dir.
func (o *options) openLive(log *slog.Logger) (*livestate.Store, error) {
	if o.live.stateDir == "" {
		return nil, nil
	}
	st, err := livestate.Open(o.live.stateDir, livestate.Options{Settings: o.live.set, Replica: o.live.replica})
	if err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	if st.Torn > 0 || st.Repaired > 0 {
		log.Warn("the state log's end was cut short by a crash", "torn_bytes_cut", st.Torn, "decisions_written_again", st.Repaired)
	}
	log.Info("live rubric", "state_dir", o.live.stateDir, "replica", o.live.replica, "retire_saturated", o.live.set.RetireSaturated, "window", o.live.set.Window)
	return st, nil
}

// penaltyCorrFlag is --penalty-corr.
func (o *options) penaltyCorrFlag(fs *flag.FlagSet) {
	fs.Func("penalty-corr", "how RLCER's validity reads a penalty's (a PITFALL's, a proposed criterion's with negative points) corr(v, z) > alpha: sign-aware (the default: corr of the flaw being absent with correctness, so a flaw wrong answers have is valid) or literal (the paper's formula as written: corr of the flaw being present, so only a flaw right answers have is valid) (e.g. --penalty-corr literal)", func(v string) error {
		if v != reward.PenaltySignAware && v != reward.PenaltyLiteral {
			return errors.New("sign-aware or literal")
		}
		o.params.PenaltyCorr = v
		return nil
	})
}
