package audit

import (
	_ "embed"
)

// liveStatsHTML is the HTML report's section on the live statistics a
// corpus was refined from (distill refine --from-stats): the figures of
// the text report's section (textLiveStats), as a table.
//
//go:embed livestats.html.tmpl
var liveStatsHTML string
