package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

type bench struct {
	opt *options
	dir string
	log io.Writer
}

// measured is one distill session with what the endpoint served meanwhile
// and the run's report after it.
type measured struct {
	sess   session
	served served
	rep    report
}

type sizeResult struct {
	size   int
	full   measured
	resume measured
	kill   *killResult
	// with -mode batch: the uninterrupted run's batches, and the kill once
	// the first batch is submitted
	phases    *phases
	batchKill *batchKill
}

type killResult struct {
	doneAtKill    int64 // problems done, failed or left out in report.json when killed
	first, second measured
	// extra is what both sessions sent beyond the uninterrupted run; cut is
	// the requests the endpoint had not answered when the first session died.
	extra, cut int64
}

// report is the part of RUN/report.json the bench reads.
type report struct {
	Status   string `json:"status"`
	Problems struct {
		Unique  int64 `json:"unique"`
		Done    int64 `json:"done"`
		Failed  int64 `json:"failed"`
		LeftOut int64 `json:"left_out"`
		Pending int64 `json:"pending"`
	} `json:"problems"`
	LLM struct {
		Total struct {
			Requests  int64 `json:"requests"`
			CacheHits int64 `json:"cache_hits"`
			Retries   int64 `json:"retries"`
		} `json:"total"`
	} `json:"llm"`
}

// attempts is every HTTP request the run has sent over all its sessions.
func (r report) attempts() int64 { return r.LLM.Total.Requests + r.LLM.Total.Retries }

func (r report) handled() int64 { return r.Problems.Done + r.Problems.Failed + r.Problems.LeftOut }

func readReport(runDir string) (report, error) {
	var r report
	b, err := os.ReadFile(filepath.Join(runDir, "report.json"))
	if err != nil {
		return r, fmt.Errorf("reading the report: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("parsing %s/report.json: %w", runDir, err)
	}
	return r, nil
}

func (b *bench) all(ctx context.Context) ([]sizeResult, error) {
	var results []sizeResult
	for _, size := range b.opt.sizes {
		r, err := b.size(ctx, size)
		results = append(results, r)
		if err != nil {
			return results, fmt.Errorf("%d problems: %w", size, err)
		}
	}
	return results, nil
}

func (b *bench) size(ctx context.Context, size int) (sizeResult, error) {
	res := sizeResult{size: size}
	dir := filepath.Join(b.dir, fmt.Sprintf("p%d", size))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("making %s: %w", dir, err)
	}
	problems := filepath.Join(dir, "problems.jsonl")
	write := writeProblems
	if b.opt.style == "grounded" {
		write = writeDocuments
	}
	if err := write(problems, size); err != nil {
		return res, err
	}
	job := filepath.Join(dir, "job.yaml")
	if err := writeJob(job, "run", b.opt, 30*time.Second); err != nil {
		return res, err
	}
	if b.opt.mode == "batch" {
		return b.batchSize(ctx, res, dir, job)
	}
	var err error
	b.say("%d problems: uninterrupted run", size)
	var extra []string
	if b.opt.profile {
		extra = []string{"--cpuprofile", filepath.Join(dir, "cpu.pprof"), "--memprofile", filepath.Join(dir, "mem.pprof")}
	}
	if res.full, err = b.session(ctx, dir, job, "run", "full", size, extra, nil); err != nil {
		return res, err
	}
	b.say("%d problems: resume of the finished run", size)
	if res.resume, err = b.session(ctx, dir, job, "run", "resume", size, nil, nil); err != nil {
		return res, err
	}
	if size == b.opt.killSize {
		k, err := b.killResume(ctx, dir, size, res.full)
		res.kill = k
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// session runs distill once against a fresh simllm and checks that the run
// finished, unless watch killed it.
func (b *bench) session(ctx context.Context, dir, job, out, name string, size int, extra []string, watch func() bool) (measured, error) {
	var m measured
	s, err := startSim(ctx, b.opt.bin, filepath.Join(dir, "problems.jsonl"), b.opt.latency, b.simArgs(dir)...)
	if err != nil {
		return m, err
	}
	args := append([]string{"--config", job, "--base-url", s.url}, extra...)
	args = append(args, b.distillArgs()...)
	m.sess, err = runDistill(ctx, b.opt.bin, args, filepath.Join(dir, name+".log"), watch)
	if watch != nil {
		time.Sleep(500 * time.Millisecond) // let the endpoint see the dropped connections
	}
	sv, serr := s.stop()
	m.served = sv
	if err != nil {
		return m, err
	}
	if serr != nil {
		return m, serr
	}
	if m.rep, err = readReport(filepath.Join(dir, out)); err != nil {
		return m, err
	}
	b.say("  %s: exit %d, %.1fs, %d requests served (%v), peak RSS %.0f MiB, CPU distill %.1fs simllm %.1fs", name,
		m.sess.code, m.sess.wall.Seconds(), sv.requests, sv.byStatus, mib(m.sess.maxRSS), m.sess.cpu.Seconds(), sv.cpu.Seconds())
	if b.opt.mode == "batch" {
		b.sayBatch(sv.batch)
	}
	if watch != nil {
		return m, nil
	}
	if m.sess.code != 0 && m.sess.code != 3 || m.rep.Status != "finished" || m.rep.handled() != int64(size) {
		return m, fmt.Errorf("%s session: exit %d, status %q, %d of %d problems handled; log:\n%s",
			name, m.sess.code, m.rep.Status, m.rep.handled(), size, tail(m.sess.logPath))
	}
	return m, nil
}

// killResume kills a fresh run with SIGKILL once half of its problems are
// handled, resumes it, and compares the requests with the uninterrupted run.
func (b *bench) killResume(ctx context.Context, dir string, size int, full measured) (*killResult, error) {
	k := &killResult{}
	job := filepath.Join(dir, "job-kill.yaml")
	// A 1 s checkpoint lets the bench see progress in report.json; it does not
	// change which requests the run sends.
	if err := writeJob(job, "run-kill", b.opt, time.Second); err != nil {
		return k, err
	}
	runDir := filepath.Join(dir, "run-kill")
	watch := func() bool {
		r, err := readReport(runDir)
		if err == nil && 2*r.handled() >= int64(size) {
			k.doneAtKill = r.handled()
			return true
		}
		return false
	}
	b.say("%d problems: run killed at 50%%", size)
	var err error
	if k.first, err = b.session(ctx, dir, job, "run-kill", "killed", size, nil, watch); err != nil {
		return k, err
	}
	if k.first.sess.code != -1 {
		return k, fmt.Errorf("the run to kill ended by itself (exit %d) before half of it was done", k.first.sess.code)
	}
	b.say("%d problems: resume after the kill", size)
	if k.second, err = b.session(ctx, dir, job, "run-kill", "after-kill", size, nil, nil); err != nil {
		return k, err
	}
	k.extra = k.first.served.requests + k.second.served.requests - full.served.requests
	k.cut = k.first.served.noReply()
	return k, nil
}

func (b *bench) say(format string, args ...any) {
	fmt.Fprintf(b.log, "benchscale: "+format+"\n", args...)
}

// writeProblems writes n distinct arithmetic problems with their answers.
func writeProblems(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range n {
		a, c := i+2, (i*7919)%997+3
		var p struct {
			Problem string `json:"problem"`
			Answer  string `json:"answer"`
		}
		switch i % 3 {
		case 0:
			p.Problem, p.Answer = fmt.Sprintf("Compute %d + %d.", a, c), fmt.Sprint(a+c)
		case 1:
			p.Problem, p.Answer = fmt.Sprintf("What is the product of %d and %d?", a, c), fmt.Sprint(a*c)
		default:
			p.Problem, p.Answer = fmt.Sprintf("Find the remainder when %d is divided by %d.", a*a, c), fmt.Sprint(a*a%c)
		}
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		_ = f.Close() // the write failed; err says why
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// writeJob writes the job: n rollouts per problem, distill and judge, no
// empirical stage, the default shard size; with -mode batch every stage in
// batch mode.
func writeJob(path, out string, o *options, checkpoint time.Duration) error {
	if o.style == "grounded" {
		return writeGroundedJob(path, out, o, checkpoint)
	}
	job := fmt.Sprintf(`# benchscale job against the SIMULATED endpoint (simllm): not a real model.
input:
  paths: [problems.jsonl]
  source: benchscale
out: %s
style: srar
rollout:
  model: simulated
  api_key_env: BENCHSCALE_NO_KEY   # unset: no key is sent
  n: %d
  temperature: 1.0
  max_tokens: 4096
judge: {enabled: true, mode: batch}
empirical: {enabled: false}
limits:
  concurrency: %d
output:
  checkpoint_interval: %s
`, out, o.n, o.concurrency, checkpoint)
	if o.mode == "batch" {
		job = batchJob(job, o)
	}
	if err := os.WriteFile(path, []byte(job), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeDocuments writes n distinct one-passage documents (about 900
// characters each) as JSONL rows {"id", "title", "text"}.
func writeDocuments(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	topics := []string{"compressor", "capacitor", "turbine", "membrane", "catalyst", "waveguide", "reactor", "inverter", "bearing", "antenna"}
	for i := range n {
		t := topics[i%len(topics)]
		doc := struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}{fmt.Sprintf("doc-%06d", i), fmt.Sprintf("Unit %d: the %s", i, t), fmt.Sprintf(
			"The %s of unit %d regulates pressure because the upstream coupling transfers thermal energy into mechanical motion. "+
				"Operators measure efficiency by comparing delivered output with consumed input; the difference appears as dissipation in bearings and seals.\n\n"+
				"Calibration of the %s matters whenever temperature drifts beyond the nominal envelope, which for unit %d is %d kelvin. "+
				"Therefore maintenance schedules track drift, vibration and lubrication together, and replacement follows sustained degradation of the %s.",
			t, i, t, i, 250+i%97, t)}
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		_ = f.Close() // the write failed; err says why
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// writeGroundedJob writes the grounded job: one question per passage,
// enrich and the validity judge on, no empirical stage.
func writeGroundedJob(path, out string, o *options, checkpoint time.Duration) error {
	job := fmt.Sprintf(`# benchscale grounded job against the SIMULATED endpoint (simllm): not a real model.
input:
  paths: [problems.jsonl]
  source: benchscale
  fields: {text: text, id: id, title: title}
out: %s
style: grounded
grounded: {passage_chars: 6000, questions_per_passage: 1, enrich: true}
rollout:
  model: simulated
  api_key_env: BENCHSCALE_NO_KEY   # unset: no key is sent
judge: {enabled: true, mode: batch}
empirical: {enabled: false}
limits:
  concurrency: %d
output:
  checkpoint_interval: %s
`, out, o.concurrency, checkpoint)
	if err := os.WriteFile(path, []byte(job), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
