package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// This file is the batch mode of the bench (-mode batch): every stage of
// the job in request_mode batch, through the simulated Files and Batch API.

// batchJob puts the job's rollout, distill and judge sections in batch
// mode (request_mode: batch) and adds the batch section: OpenAI's file
// limits (the defaults, written out) and the bench's poll interval.
func batchJob(job string, o *options) string {
	job = strings.Replace(job, "  max_tokens: 4096\n", "  max_tokens: 4096\n  request_mode: batch\ndistill: {request_mode: batch}\n", 1)
	job = strings.Replace(job, "judge: {enabled: true, mode: batch}", "judge: {enabled: true, mode: batch, request_mode: batch}", 1)
	return job + fmt.Sprintf("batch: {max_requests: 50000, max_bytes: 200000000, poll_interval: %s}\n", o.poll)
}

// simArgs are simllm's Batch API flags: the turnaround, OpenAI's limits,
// and its files under the size's directory.
func (b *bench) simArgs(dir string) []string {
	if b.opt.mode != "batch" {
		return nil
	}
	return []string{"-batch-turnaround", b.opt.turnaround.String(), "-batch-max-requests", "50000",
		"-batch-max-bytes", "200000000", "-batch-dir", dir}
}

// distillArgs: in batch mode distill logs at debug level, for the lines
// that time a file's upload and download and count the waves.
func (b *bench) distillArgs() []string {
	if b.opt.mode != "batch" {
		return nil
	}
	return []string{"--log-level", "debug"}
}

func (b *bench) sayBatch(s batchServed) {
	b.say("  batch API: %d files uploaded (%d refused), %d batches (%s); rows answered %d, failed %d, expired %d, cancelled %d; answered more than once %d",
		s.files, s.refused, s.batches, s.byStatus, s.answered, s.failed, s.expired, s.cancelled, s.answeredTwiceOrMore)
}

// batchSize measures one size in batch mode: the uninterrupted run and its
// phases, a resume of the finished run, and at the kill size a run killed
// once its first batch is submitted.
func (b *bench) batchSize(ctx context.Context, res sizeResult, dir, job string) (sizeResult, error) {
	size := res.size
	b.say("%d problems: uninterrupted run in batch mode", size)
	var extra []string
	if b.opt.profile {
		extra = []string{"--cpuprofile", filepath.Join(dir, "cpu.pprof"), "--memprofile", filepath.Join(dir, "mem.pprof")}
	}
	var err error
	if res.full, err = b.session(ctx, dir, job, "run", "full", size, extra, nil); err != nil {
		return res, err
	}
	if err := checkAllBatched(res.full.served, "the uninterrupted run"); err != nil {
		return res, err
	}
	p, err := readPhases(filepath.Join(dir, "run"), res.full.sess.logPath)
	if err != nil {
		return res, err
	}
	res.phases = &p
	b.say("  %d batches, %d waves; write %.1fs, upload %.1fs, create %.1fs, at the provider %.1fs, download %.1fs, ingest %.1fs (sums over the batches)",
		p.batches, p.waves, p.write.Seconds(), p.upload.Seconds(), p.create.Seconds(), p.provider.Seconds(), p.download.Seconds(), p.ingest.Seconds())
	if p.batches != int(res.full.served.batch.batches) {
		return res, fmt.Errorf("the journal lists %d batches, the endpoint made %d", p.batches, res.full.served.batch.batches)
	}
	b.say("%d problems: resume of the finished run", size)
	if res.resume, err = b.session(ctx, dir, job, "run", "resume", size, nil, nil); err != nil {
		return res, err
	}
	if size == b.opt.killSize {
		k, err := b.killBatches(ctx, dir, size, res.full)
		res.batchKill = k
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// checkAllBatched fails when a session in batch mode sent requests online
// or had a request answered twice.
func checkAllBatched(sv served, what string) error {
	if sv.requests != 0 {
		return fmt.Errorf("%s sent %d requests online; every stage is in batch mode", what, sv.requests)
	}
	if sv.batch.answeredTwiceOrMore != 0 || sv.batch.failed+sv.batch.expired+sv.batch.cancelled != 0 {
		return fmt.Errorf("%s: %d requests answered more than once, rows failed %d, expired %d, cancelled %d (none injected)",
			what, sv.batch.answeredTwiceOrMore, sv.batch.failed, sv.batch.expired, sv.batch.cancelled)
	}
	return nil
}

// batchKill is a run killed with SIGKILL once its first batch was
// submitted, resumed against the same endpoint.
type batchKill struct {
	atKill        journalCount // the journal when killed
	first, second measured     // second.served is the endpoint's, over both sessions
	final         journalCount
	fullRows      int64 // rows the uninterrupted run's endpoint answered
}

// journalCount is what a batch journal lists.
type journalCount struct {
	batches, submitted, open int
	ids                      map[string]bool // batch ids
}

// killBatches runs a fresh run until its journal lists a submitted batch,
// kills it with SIGKILL, and resumes it against the same endpoint (which
// keeps the batches), then checks that the resume polled the batches it
// found instead of making them again and that no request was answered
// twice.
func (b *bench) killBatches(ctx context.Context, dir string, size int, full measured) (*batchKill, error) {
	k := &batchKill{fullRows: full.served.batch.answered}
	job := filepath.Join(dir, "job-kill.yaml")
	if err := writeJob(job, "run-kill", b.opt, time.Second); err != nil {
		return k, err
	}
	runDir := filepath.Join(dir, "run-kill")
	s, err := startSim(ctx, b.opt.bin, filepath.Join(dir, "problems.jsonl"), b.opt.latency, b.simArgs(dir)...)
	if err != nil {
		return k, err
	}
	defer func() {
		if s.cmd.ProcessState == nil {
			_, _ = s.stop()
		}
	}()
	args := append([]string{"--config", job, "--base-url", s.url}, b.distillArgs()...)
	watch := func() bool {
		c, err := countJournal(runDir)
		if err == nil && c.submitted > 0 {
			k.atKill = c
			return true
		}
		return false
	}
	b.say("%d problems: run killed once its first batch is submitted", size)
	if k.first.sess, err = runDistill(ctx, b.opt.bin, args, filepath.Join(dir, "killed.log"), watch); err != nil {
		return k, err
	}
	if k.first.sess.code != -1 {
		return k, fmt.Errorf("the run to kill ended by itself (exit %d) before a batch was submitted", k.first.sess.code)
	}
	b.say("  killed after %.1fs: the journal lists %d batches, %d submitted, %d open", k.first.sess.wall.Seconds(),
		k.atKill.batches, k.atKill.submitted, k.atKill.open)
	b.say("%d problems: resume after the kill, against the same endpoint", size)
	if k.second.sess, err = runDistill(ctx, b.opt.bin, args, filepath.Join(dir, "after-kill.log"), nil); err != nil {
		return k, err
	}
	if k.second.served, err = s.stop(); err != nil {
		return k, err
	}
	if k.second.rep, err = readReport(runDir); err != nil {
		return k, err
	}
	if k.final, err = countJournal(runDir); err != nil {
		return k, err
	}
	sv := k.second.served
	b.say("  resume: exit %d, %.1fs, peak RSS %.0f MiB", k.second.sess.code, k.second.sess.wall.Seconds(), mib(k.second.sess.maxRSS))
	b.sayBatch(sv.batch)
	return k, k.check(size)
}

// check says what the kill broke, if anything: the resumed run must finish,
// every batch the endpoint made must be one the journal lists (none made
// again under a new id), the batches known at the kill must still be
// listed, and no request may have been answered twice or beyond what the
// uninterrupted run needed.
func (k *batchKill) check(size int) error {
	r, sv := k.second.rep, k.second.served
	var errs []error
	if k.second.sess.code != 0 && k.second.sess.code != 3 || r.Status != "finished" || r.handled() != int64(size) {
		errs = append(errs, fmt.Errorf("the resumed run: exit %d, status %q, %d of %d problems handled; log:\n%s",
			k.second.sess.code, r.Status, r.handled(), size, tail(k.second.sess.logPath)))
	}
	if err := checkAllBatched(sv, "the killed and resumed run"); err != nil {
		errs = append(errs, err)
	}
	if int(sv.batch.batches) != len(k.final.ids) {
		errs = append(errs, fmt.Errorf("the endpoint made %d batches, the journal lists %d batch ids", sv.batch.batches, len(k.final.ids)))
	}
	for id := range k.atKill.ids {
		if !k.final.ids[id] {
			errs = append(errs, fmt.Errorf("batch %s, listed at the kill, is gone from the journal", id))
		}
	}
	if sv.batch.answered != k.fullRows {
		errs = append(errs, fmt.Errorf("the endpoint answered %d rows over both sessions, the uninterrupted run %d", sv.batch.answered, k.fullRows))
	}
	return errors.Join(errs...)
}

// journalLine is the part of a line of RUN/batches/journal.jsonl the bench
// reads.
type journalLine struct {
	Local   string    `json:"local"`
	Phase   string    `json:"phase"`
	Status  string    `json:"status"`
	BatchID string    `json:"batch_id"`
	Rows    int       `json:"rows"`
	Bytes   int64     `json:"bytes"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// readJournal reads every line of a run's batch journal, skipping a torn
// last line (the run was killed mid-append).
func readJournal(runDir string) ([]journalLine, error) {
	f, err := os.Open(filepath.Join(runDir, "batches", "journal.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	var out []journalLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l journalLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			continue
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

func countJournal(runDir string) (journalCount, error) {
	lines, err := readJournal(runDir)
	c := journalCount{ids: map[string]bool{}}
	if err != nil {
		return c, err
	}
	last := map[string]string{}
	for _, l := range lines {
		last[l.Local] = l.Phase
		if l.BatchID != "" {
			c.ids[l.BatchID] = true
		}
	}
	c.batches, c.submitted = len(last), len(c.ids)
	for _, phase := range last {
		if phase != "ingested" && phase != "dropped" {
			c.open++
		}
	}
	return c, nil
}

// phases are the batches of a finished run and the time each phase took,
// summed over them: write (the input file from its first row to sealed on
// disk), queue (sealed to its upload's start), upload, create (finding and
// creating the batch), provider (created to seen completed, so up to a poll
// interval more than the provider took), download (output and error files)
// and ingest (answers into the cache).
type phases struct {
	batches, waves, rows                                     int
	inBytes, outBytes                                        int64
	write, queue, upload, create, provider, download, ingest time.Duration
	maxWrite, maxUpload, maxProvider, maxDownload, maxIngest time.Duration
}

// batchTimes is what the journal and the log say of one batch.
type batchTimes struct {
	created, written, uploaded, submitted, completed, ingested time.Time
	uploadTook, downloadTook                                   time.Duration
	downloaded, ingestLogged                                   time.Time
	rows                                                       int
	inBytes, outBytes                                          int64
}

// readPhases adds up the phases of a finished run's batches from its
// journal and its log.
func readPhases(runDir, logPath string) (phases, error) {
	var p phases
	lines, err := readJournal(runDir)
	if err != nil {
		return p, err
	}
	times := map[string]*batchTimes{}
	var order []string
	for _, l := range lines {
		t := times[l.Local]
		if t == nil {
			t = &batchTimes{created: l.Created}
			times[l.Local] = t
			order = append(order, l.Local)
		}
		switch {
		case l.Phase == "written":
			t.written, t.rows, t.inBytes = l.Updated, l.Rows, l.Bytes
		case l.Phase == "uploaded":
			t.uploaded = l.Updated
		case l.Phase == "submitted" && t.submitted.IsZero():
			t.submitted = l.Updated
			if terminal(l.Status) {
				t.completed = l.Updated
			}
		case l.Phase == "submitted" && terminal(l.Status):
			t.completed = l.Updated
		case l.Phase == "ingested":
			t.ingested = l.Updated
		}
	}
	if err := readPhaseLog(logPath, times, &p); err != nil {
		return p, err
	}
	for _, local := range order {
		t := times[local]
		if t.written.IsZero() || t.uploaded.IsZero() || t.completed.IsZero() || t.ingested.IsZero() || t.downloaded.IsZero() || t.ingestLogged.IsZero() {
			return p, fmt.Errorf("batch %s: the journal or the log lacks a phase (%+v)", local, *t)
		}
		uploadStart := t.uploaded.Add(-t.uploadTook)
		p.batches++
		p.rows += t.rows
		p.inBytes += t.inBytes
		p.outBytes += t.outBytes
		add := func(sum, most *time.Duration, d time.Duration) {
			d = max(d, 0)
			*sum += d
			if most != nil {
				*most = max(*most, d)
			}
		}
		add(&p.write, &p.maxWrite, t.written.Sub(t.created))
		add(&p.queue, nil, uploadStart.Sub(t.written))
		add(&p.upload, &p.maxUpload, t.uploadTook)
		add(&p.create, nil, t.submitted.Sub(t.uploaded))
		add(&p.provider, &p.maxProvider, t.completed.Sub(t.submitted))
		add(&p.download, &p.maxDownload, t.downloadTook)
		add(&p.ingest, &p.maxIngest, t.ingestLogged.Sub(t.downloaded))
	}
	return p, nil
}

func terminal(status string) bool {
	switch status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// logLine matches distill's text log lines of the batch phases.
var logLine = regexp.MustCompile(`^time=(\S+) level=\w+ msg="(batch uploaded|batch downloaded|batch ingested|batch wave)"(.*)$`)

// readPhaseLog reads the upload, download, ingest and wave lines of a
// distill log (--log-level debug).
func readPhaseLog(path string, times map[string]*batchTimes, p *phases) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // only read: closing loses nothing
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := logLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if m[2] == "batch wave" {
			p.waves++
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			return fmt.Errorf("%s: time %q: %w", path, m[1], err)
		}
		attrs := logAttrs(m[3])
		t := times[attrs["batch"]]
		if t == nil {
			return fmt.Errorf("%s: %q names a batch the journal does not list", path, sc.Text())
		}
		took, _ := time.ParseDuration(attrs["took"])
		switch m[2] {
		case "batch uploaded":
			t.uploadTook = took
		case "batch downloaded":
			t.downloaded, t.downloadTook = at, took
			t.outBytes, _ = strconv.ParseInt(attrs["bytes"], 10, 64)
		case "batch ingested":
			t.ingestLogged = at
		}
	}
	return sc.Err()
}

// logAttrs splits ` key=value key=value` (values without spaces or quotes,
// as the batch lines have them).
func logAttrs(s string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(s) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		}
	}
	return out
}
