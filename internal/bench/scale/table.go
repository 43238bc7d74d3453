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
	if o.mode == "batch" {
		printBatchTable(w, o, results)
		return
	}
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

// printBatchTable writes the batch-mode figures of every size: the
// batches, the phases summed over them, then the kill and resume.
func printBatchTable(w io.Writer, o *options, results []sizeResult) {
	fmt.Fprintf(w, "distill run in batch mode against the SIMULATED endpoint: n=%d, rollout, distill and judge through the Files and Batch API, at most 50,000 requests and 200 MB a file, turnaround %v, poll every %v\n",
		o.n, o.turnaround, o.poll)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "problems\tbatches\twaves\trows\tin MB\tout MB\twall s\tpeak RSS MiB\twrite s\tupload s\tcreate s\tat provider s\tdownload s\tingest s\tresume s\tresume requests\t")
	for _, r := range results {
		p := r.phases
		if p == nil {
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.0f\t%.0f\t%.1f\t%.0f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%s\t%s\t\n", r.size, p.batches, p.waves, p.rows,
			float64(p.inBytes)/1e6, float64(p.outBytes)/1e6, r.full.sess.wall.Seconds(), mib(r.full.sess.maxRSS),
			p.write.Seconds(), p.upload.Seconds(), p.create.Seconds(), p.provider.Seconds(), p.download.Seconds(), p.ingest.Seconds(),
			orDash(r.resume.sess.wall > 0, fmt.Sprintf("%.1f", r.resume.sess.wall.Seconds())),
			orDash(r.resume.sess.wall > 0, fmt.Sprint(r.resume.served.requests+r.resume.served.batch.answered)))
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "phases summed over the batches: write = first row to file sealed; upload; create = find and create the batch; at provider = created to seen completed; download = output file; ingest = answers into the cache. rows: requests in batches; resume requests: online plus batch rows")
	for _, r := range results {
		if p := r.phases; p != nil {
			fmt.Fprintf(w, "%d problems: the longest batch took write %.1fs, upload %.1fs, at the provider %.1fs, download %.1fs, ingest %.1fs; files waited %.1fs in all between sealed and uploaded\n",
				r.size, p.maxWrite.Seconds(), p.maxUpload.Seconds(), p.maxProvider.Seconds(), p.maxDownload.Seconds(), p.maxIngest.Seconds(), p.queue.Seconds())
		}
		if k := r.batchKill; k != nil && k.second.sess.wall > 0 {
			sv := k.second.served.batch
			fmt.Fprintf(w, "kill once the first batch was submitted (%d problems; SIGKILL after %.1fs, %d batches in the journal, %d submitted, %d open): the resume against the same endpoint took %.1fs (peak RSS %.0f MiB); the endpoint made %d batches over both sessions, the journal lists %d batch ids (%d made again); rows answered %d, the uninterrupted run %d; requests answered more than once: %d\n",
				r.size, k.first.sess.wall.Seconds(), k.atKill.batches, k.atKill.submitted, k.atKill.open, k.second.sess.wall.Seconds(),
				mib(k.second.sess.maxRSS), sv.batches, len(k.final.ids), sv.batches-int64(len(k.final.ids)), sv.answered, k.fullRows, sv.answeredTwiceOrMore)
		}
	}
}
