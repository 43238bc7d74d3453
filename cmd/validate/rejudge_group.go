package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rubricforge/rubricforge/audit"
	"github.com/rubricforge/rubricforge/rejudge"
)

// rejudgeGroup runs validate rejudge --judge-group: group judging measured
// against one request per response, and the group order's position bias.
func rejudgeGroup(ctx context.Context, in *audit.Input, cfg rejudge.Config, asJSON bool, e env) int {
	rep, err := rejudge.RunGroup(ctx, in, cfg)
	switch {
	case errors.Is(err, context.Canceled) && rep != nil:
		printGroup(rep, asJSON, e)
		fmt.Fprintf(e.stderr, "validate rejudge: interrupted after %d of %d drawn groups; the figures above are over those; answered requests are in the cache, so the same command pays only for the rest\n",
			rep.Sample.Judged, rep.Sample.Drawn)
		return exitStopped
	case err != nil:
		fmt.Fprintf(e.stderr, "validate rejudge: %v\n", err)
		return exitFailed
	}
	if !printGroup(rep, asJSON, e) {
		return exitFailed
	}
	s := rep.Sample
	if s.Judged == 0 {
		why := "none of the drawn groups could be judged (see the warnings above)"
		if s.Stopped != "" {
			why = string(s.Stopped)
		}
		fmt.Fprintf(e.stderr, "validate rejudge: no group was compared: %s\n", why)
		return exitFailed
	}
	code := exitOK
	if len(rep.InputProblems) > 0 {
		fmt.Fprintf(e.stderr, "validate rejudge: part of the corpus could not be read:\n  %s\n", problemLines(rep.InputProblems))
		code = exitPartial
	}
	if s.Failed > 0 {
		why := "some of their requests failed or the replies never parsed (see the warnings above)"
		if s.Stopped != "" {
			why = string(s.Stopped)
		}
		fmt.Fprintf(e.stderr, "validate rejudge: %d of %d drawn groups were left out: %s\n", s.Failed, s.Drawn, why)
		code = exitPartial
	}
	return code
}

// printGroup prints rep on stdout; false (said on stderr) when it could
// not.
func printGroup(rep *audit.GroupReport, asJSON bool, e env) bool {
	write := rep.WriteText
	if asJSON {
		write = rep.WriteJSON
	}
	if err := write(e.stdout); err != nil && !errors.Is(err, io.ErrShortWrite) {
		fmt.Fprintf(e.stderr, "validate rejudge: writing the report: %v\n", err)
		return false
	}
	return true
}
