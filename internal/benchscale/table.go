package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// printTable writes the figures of every measured size, then the
// kill-and-resume comparison.
func printTable(w io.Writer, o *options, results []sizeResult) {
	if o.style == "grounded" {
		fmt.Fprintf(w, "distill run --style grounded against the SIMULATED endpoint: one-passage documents, analyze, synthesize (1 question), enrich and judge, concurrency %d, mean latency %v\n",
			o.concurrency, o.latency)
	} else {
		fmt.Fprintf(w, "distill run against the SIMULATED endpoint: n=%d, distill and judge, concurrency %d, mean latency %v\n",
			o.n, o.concurrency, o.latency)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "problems\trequests\treport\twall s\tideal s\tefficiency\tpeak RSS MiB\tresume s\tresume requests\tresume RSS MiB\t")
	for _, r := range results {
		if r.full.sess.wall == 0 {
			continue
		}
		ideal := time.Duration(float64(r.full.served.requests) * float64(o.latency) / float64(o.concurrency))
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f\t%.1f\t%.2f\t%.0f\t%s\t%s\t%s\t\n", r.size, r.full.served.requests,
			r.full.rep.attempts(), r.full.sess.wall.Seconds(), ideal.Seconds(), ideal.Seconds()/r.full.sess.wall.Seconds(),
			mib(r.full.sess.maxRSS), orDash(r.resume.sess.wall > 0, fmt.Sprintf("%.1f", r.resume.sess.wall.Seconds())),
			orDash(r.resume.sess.wall > 0, fmt.Sprint(r.resume.served.requests)),
			orDash(r.resume.sess.wall > 0, fmt.Sprintf("%.0f", mib(r.resume.sess.maxRSS))))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "requests: counted by the endpoint (every HTTP request); report: requests + retries in report.json")
	for _, r := range results {
		if k := r.kill; k != nil && k.second.sess.wall > 0 {
			fmt.Fprintf(w, "kill at 50%% (%d problems; %d handled when killed with SIGKILL): sessions sent %d + %d = %d requests, the uninterrupted run %d: extra %d, in flight at most %d (concurrency; %d of them still waiting at the endpoint); resume took %.1fs\n",
				r.size, k.doneAtKill, k.first.served.requests, k.second.served.requests,
				k.first.served.requests+k.second.served.requests, r.full.served.requests, k.extra, o.concurrency, k.cut,
				k.second.sess.wall.Seconds())
		}
	}
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

func orDash(ok bool, s string) string {
	if ok {
		return s
	}
	return "-"
}
