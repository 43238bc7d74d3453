package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// This file answers a batch: it validates the input file, then streams it
// row by row into an output file and an error file on disk, paced over
// Config.BatchTurnaround. Each row is answered by the code that answers an
// online request (parseChat, classify, respond), so a row's body is
// byte for byte the online reply to the same request.

// maxBatchErrors bounds the validation errors a failed batch reports.
const maxBatchErrors = 100

// rowsPerSlot is how many rows a batch answers before it lets other
// batches take its answering slot.
const rowsPerSlot = 256

// batchInputLine is one line of a batch's input file.
type batchInputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// batchOutputLine is one line of a batch's output or error file.
type batchOutputLine struct {
	ID       string         `json:"id"`
	CustomID string         `json:"custom_id"`
	Response *batchResponse `json:"response"`
	Error    *batchRowError `json:"error"`
}

type batchResponse struct {
	StatusCode int             `json:"status_code"`
	RequestID  string          `json:"request_id"`
	Body       json.RawMessage `json:"body"`
}

type batchRowError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// runBatch takes a batch from "validating" to a final status.
func (s *Server) runBatch(b *batch, in *os.File) {
	a := s.batch
	defer a.running.Done()
	defer func() { _ = in.Close() }() // only read: closing loses nothing
	n, errs, err := s.validateBatch(b, in)
	if err == nil && len(errs) == 0 {
		_, err = in.Seek(0, io.SeekStart)
	}
	switch {
	case s.closing():
		return
	case err != nil:
		errs = []batchError{{Code: "file_read_error", Message: "reading the input file: " + err.Error()}}
	}
	if len(errs) > 0 {
		a.fail(b, errs)
		return
	}
	a.setInProgress(b, n)
	s.answerRows(b, in, n)
}

func (s *Server) closing() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// validateBatch reads the input file once and checks every line as OpenAI
// does before it runs a batch: one JSON object per line with a unique
// custom_id, method POST, the batch's url and one model throughout, at
// most Config.BatchMaxRequests of them. It returns the number of requests
// and the errors, each naming its line.
func (s *Server) validateBatch(b *batch, in io.Reader) (int, []batchError, error) {
	var errs []batchError
	bad := func(line int, code, param, format string, args ...any) {
		if len(errs) < maxBatchErrors {
			e := batchError{Code: code, Message: fmt.Sprintf("line %d: ", line) + fmt.Sprintf(format, args...), Line: ptr(line)}
			if param != "" {
				e.Param = ptr(param)
			}
			errs = append(errs, e)
		}
	}
	lr := newLineReader(in)
	seen := map[uint64]int{} // hashed custom_id -> line
	model, modelLine, n := "", 0, 0
	for {
		if s.closing() {
			return 0, nil, errors.New("the server is closing")
		}
		raw, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errLineTooLong) {
			n++
			bad(lr.line, "invalid_json_line", "", "the line is over the simulated endpoint's %d-byte limit for a request", maxBodyBytes)
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		if n++; n > s.cfg.BatchMaxRequests {
			bad(lr.line, "too_many_tasks", "", "the file has more than %d requests, the most a batch may hold", s.cfg.BatchMaxRequests)
			break
		}
		var row batchInputLine
		if err := json.Unmarshal(raw, &row); err != nil {
			bad(lr.line, "invalid_json_line", "", "this line is not a JSON object: %v", err)
			continue
		}
		var body struct {
			Model string `json:"model"`
		}
		switch {
		case row.CustomID == "":
			bad(lr.line, "missing_required_parameter", "custom_id", "custom_id is missing or empty")
		case row.Method != http.MethodPost:
			bad(lr.line, "invalid_request", "method", "method %q: want POST", row.Method)
		case row.URL != b.obj.Endpoint:
			bad(lr.line, "url_mismatch", "url", "url %q differs from the batch's endpoint %s", row.URL, b.obj.Endpoint)
		case json.Unmarshal(row.Body, &body) != nil || !bytes.HasPrefix(bytes.TrimSpace(row.Body), []byte("{")):
			bad(lr.line, "invalid_request", "body", "body is missing or not a JSON object")
		case body.Model == "":
			bad(lr.line, "missing_required_parameter", "body.model", "body.model is missing or empty")
		case model != "" && body.Model != model:
			bad(lr.line, "model_mismatch", "body.model", "model %q differs from model %q of line %d; a batch holds requests to one model", body.Model, model, modelLine)
		}
		if model == "" && body.Model != "" {
			model, modelLine = body.Model, lr.line
		}
		if row.CustomID != "" {
			h := key(0, "custom_id", row.CustomID)
			if first, dup := seen[h]; dup {
				bad(lr.line, "duplicate_custom_id", "custom_id", "custom_id %q is also on line %d; custom_ids must be unique within a batch", excerpt(row.CustomID, 128), first)
			} else {
				seen[h] = lr.line
			}
		}
	}
	if n == 0 && len(errs) == 0 {
		errs = append(errs, batchError{Code: "empty_file", Message: "the input file holds no requests"})
	}
	return n, errs, nil
}

// answerRows answers a batch's n rows in order, paced over the turnaround,
// until they are done, the batch expires or is cancelled (the remaining
// rows then go to the error file), or the server closes (nothing more is
// written).
func (s *Server) answerRows(b *batch, in io.Reader, n int) {
	a := s.batch
	outs := batchOutputs{dir: a.dir, batchID: b.firstID}
	defer outs.discard()
	stop := n
	if b.expire {
		stop = n / 2
	}
	slot := rowSlot{s: s, b: b}
	defer slot.release()
	lr := newLineReader(in)
	ending, i := "", 0
	for ; i < n; i++ {
		if i == stop {
			ending = BatchExpired
			break
		}
		res := slot.waitFor(b.due(i, n, s.cfg.BatchTurnaround))
		if res == waitClosed {
			return
		}
		if res == waitCancelled {
			ending = BatchCancelled
			break
		}
		raw, err := lr.nextRequest()
		if err == nil {
			err = s.answerRow(b, raw, &outs)
		}
		if err != nil {
			a.fail(b, []batchError{{Code: "file_write_error", Message: "answering the batch: " + err.Error()}})
			return
		}
	}
	for ; i < n; i++ {
		raw, err := lr.nextRequest()
		if err == nil {
			err = s.endRow(b, raw, ending, &outs)
		}
		if err != nil {
			a.fail(b, []batchError{{Code: "file_write_error", Message: "answering the batch: " + err.Error()}})
			return
		}
	}
	a.finish(b, ending, &outs)
}

// due is when row i (from 0) of n may be answered: the rows are spread
// evenly over the turnaround, counted from the batch's creation.
func (b *batch) due(i, n int, turnaround time.Duration) time.Time {
	return b.created.Add(time.Duration(float64(turnaround) * float64(i+1) / float64(n)))
}

type waitResult int

const (
	waitOK waitResult = iota
	waitCancelled
	waitClosed
)

// rowSlot paces a batch's rows and holds one of the server's answering
// slots while the batch answers rows, so that only a few batches answer at
// once however many are open.
type rowSlot struct {
	s    *Server
	b    *batch
	held bool
	used int
}

// waitFor waits until row i is due, the batch is cancelled or the server
// closes, then takes a slot to answer the row in.
func (r *rowSlot) waitFor(due time.Time) waitResult {
	if d := time.Until(due); d > 0 {
		r.release()
		t := time.NewTimer(max(d, 10*time.Millisecond)) // answer the rows due meanwhile together
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.b.cancel:
			return waitCancelled
		case <-r.s.closed:
			return waitClosed
		}
	}
	if r.held && r.used >= rowsPerSlot {
		r.release()
	}
	select {
	case <-r.b.cancel:
		return waitCancelled
	case <-r.s.closed:
		return waitClosed
	default:
	}
	if !r.held {
		select {
		case r.s.batch.slots <- struct{}{}:
			r.held, r.used = true, 0
		case <-r.b.cancel:
			return waitCancelled
		case <-r.s.closed:
			return waitClosed
		}
	}
	r.used++
	return waitOK
}

func (r *rowSlot) release() {
	if r.held {
		<-r.s.batch.slots
		r.held = false
	}
}

// answerRow answers one validated input line into the output file (status
// 200) or the error file (any other status).
func (s *Server) answerRow(b *batch, raw []byte, outs *batchOutputs) error {
	var row batchInputLine
	if err := json.Unmarshal(raw, &row); err != nil {
		return fmt.Errorf("re-reading a validated line: %w", err)
	}
	rowKey := key(s.cfg.Seed, "batch-row", b.firstID, row.CustomID)
	status, body, reqKey, usage := s.batchReply(b, row.CustomID, row.Body)
	line := batchOutputLine{ID: fmt.Sprintf("batch_req_%016x", rowKey), CustomID: row.CustomID,
		Response: &batchResponse{StatusCode: status, RequestID: fmt.Sprintf("req_%016x", mix64(rowKey)), Body: body}}
	a := s.batch
	if status != http.StatusOK {
		if err := outs.errorFile().write(line); err != nil {
			return err
		}
		a.mu.Lock()
		b.obj.RequestCounts.Failed++
		a.rows.failed++
		a.mu.Unlock()
		return nil
	}
	if err := outs.outputFile().write(line); err != nil {
		return err
	}
	s.answers.note(reqKey)
	s.bill.add(true, usage.model, usage.Usage)
	a.customIDs.note(key(0, "custom_id", row.CustomID))
	a.mu.Lock()
	b.obj.RequestCounts.Completed++
	a.rows.answered++
	a.mu.Unlock()
	return nil
}

// batchReply answers a row's request body as an online request is
// answered, with Malformed faults drawn the same way (so the same request
// gets the same reply), but without latency, the rate limit or transport
// faults (429, 500, hang, truncate). A row fails instead (500) at
// Config.BatchRowFailRate, drawn per custom_id and batch; a failed row
// draws no fault, so its reply in a later batch is the one it would have
// had.
func (s *Server) batchReply(b *batch, customID string, body []byte) (int, json.RawMessage, uint64, modelUsage) {
	if rate := s.cfg.BatchRowFailRate; rate > 0 &&
		unit(newKeyer(s.cfg.Seed).str("batch-row-fail").str(customID).u64(uint64(b.seq)).sum()) < rate {
		return http.StatusInternalServerError, errorJSON("server_error", nil,
			"simulated internal server error in a batch row (llmtest); resubmit the row"), 0, modelUsage{}
	}
	req, msgs, reqKey, problem := parseChat(body)
	if problem != "" {
		return http.StatusBadRequest, errorJSON("invalid_request_error", nil, problem), reqKey, modelUsage{}
	}
	kind, prompt, _ := classify(msgs)
	if kind == KindUnknown {
		return http.StatusBadRequest, errorJSON("invalid_request_error", "unrecognized_prompt",
			"the simulated endpoint (rubricforge llmtest) does not recognize this prompt: it answers only the pipeline's own templates"), reqKey, modelUsage{}
	}
	draw := s.drawOf(reqKey, s.attempts.Add(1))
	resp := s.respond(req, msgs, kind, prompt, reqKey, req.n(), s.fault(reqKey, draw) == FaultMalformed, draw)
	usage := modelUsage{model: req.Model, Usage: Usage{Responses: 1, PromptTokens: int64(resp.Usage.PromptTokens), CompletionTokens: int64(resp.Usage.CompletionTokens)}}
	return http.StatusOK, resp.marshal(), reqKey, usage
}

func errorJSON(typ string, code any, msg string) json.RawMessage {
	out, _ := json.Marshal(errorEnvelope{errorBody{Message: msg, Type: typ, Code: code}})
	return out
}

// endRow writes a row the batch did not answer (it expired or was
// cancelled first) to the error file.
func (s *Server) endRow(b *batch, raw []byte, ending string, outs *batchOutputs) error {
	var row batchInputLine
	if err := json.Unmarshal(raw, &row); err != nil {
		return fmt.Errorf("re-reading a validated line: %w", err)
	}
	line := batchOutputLine{ID: fmt.Sprintf("batch_req_%016x", key(s.cfg.Seed, "batch-row", b.firstID, row.CustomID)),
		CustomID: row.CustomID, Error: &batchRowError{Code: "batch_expired",
			Message: "the batch expired before this request was answered (simulated expiry, llmtest)"}}
	if ending == BatchCancelled {
		line.Error = &batchRowError{Code: "batch_cancelled", Message: "the batch was cancelled before this request was answered"}
	}
	if err := outs.errorFile().write(line); err != nil {
		return err
	}
	a := s.batch
	a.mu.Lock()
	if ending == BatchCancelled {
		a.rows.cancelled++
	} else {
		a.rows.expired++
	}
	a.mu.Unlock()
	return nil
}

// setInProgress records a validated batch's size; a batch being cancelled
// stays "cancelling".
func (a *batchAPI) setInProgress(b *batch, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b.obj.RequestCounts.Total = n
	b.obj.InProgressAt = ptr(unixNow())
	if b.obj.Status == BatchValidating {
		b.obj.Status = BatchInProgress
	}
}

// fail ends a batch in status "failed" with errs.
func (a *batchAPI) fail(b *batch, errs []batchError) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b.obj.Status, b.obj.FailedAt = BatchFailed, ptr(unixNow())
	b.obj.Errors = &batchErrors{Object: "list", Data: errs}
	a.open--
}

// finish publishes a batch's output and error files (each only when it
// has rows) and ends it: "expired" or "cancelled" when it ended so,
// "cancelled" when it was being cancelled as its last row was answered,
// else "completed".
func (a *batchAPI) finish(b *batch, ending string, outs *batchOutputs) {
	a.mu.Lock()
	if ending == "" && b.obj.Status == BatchInProgress {
		b.obj.Status, b.obj.FinalizingAt = BatchFinalizing, ptr(unixNow())
	}
	a.mu.Unlock()
	outID, errID, err := outs.publish(a)
	if err != nil {
		a.fail(b, []batchError{{Code: "file_write_error", Message: "writing the batch's output: " + err.Error()}})
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b.obj.OutputFileID, b.obj.ErrorFileID = outID, errID
	now := ptr(unixNow())
	switch {
	case ending == BatchExpired:
		b.obj.Status, b.obj.ExpiredAt = BatchExpired, now
	case ending == BatchCancelled || b.obj.Status == BatchCancelling:
		b.obj.Status, b.obj.CancelledAt = BatchCancelled, now
	default:
		b.obj.Status, b.obj.CompletedAt = BatchCompleted, now
	}
	a.open--
}

// batchOutputs are a batch's output and error files, made on their first
// row.
type batchOutputs struct {
	dir, batchID string
	out, errs    *rowFile
}

type rowFile struct {
	f     *os.File
	w     *bufio.Writer
	bytes int64
	err   error
}

func (o *batchOutputs) outputFile() *rowFile {
	if o.out == nil {
		o.out = newRowFile(o.dir)
	}
	return o.out
}

func (o *batchOutputs) errorFile() *rowFile {
	if o.errs == nil {
		o.errs = newRowFile(o.dir)
	}
	return o.errs
}

func newRowFile(dir string) *rowFile {
	f, err := os.CreateTemp(dir, "output-*")
	if err != nil {
		return &rowFile{err: fmt.Errorf("making an output file: %w", err)}
	}
	return &rowFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}
}

func (r *rowFile) write(line batchOutputLine) error {
	if r.err != nil {
		return r.err
	}
	out, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("encoding a row: %w", err)
	}
	out = append(out, '\n')
	if _, err := r.w.Write(out); err != nil {
		r.err = fmt.Errorf("writing %s: %w", r.f.Name(), err)
		return r.err
	}
	r.bytes += int64(len(out))
	return nil
}

// publish flushes the files and makes them File objects with purpose
// "batch_output"; it returns their ids (nil for a file with no rows).
func (o *batchOutputs) publish(a *batchAPI) (*string, *string, error) {
	var ids [2]*string
	for i, rf := range []*rowFile{o.out, o.errs} {
		if rf == nil {
			continue
		}
		if rf.err != nil {
			return nil, nil, rf.err
		}
		if err := rf.w.Flush(); err != nil {
			return nil, nil, fmt.Errorf("writing %s: %w", rf.f.Name(), err)
		}
		if err := rf.f.Close(); err != nil {
			return nil, nil, fmt.Errorf("writing %s: %w", rf.f.Name(), err)
		}
		name := o.batchID + []string{"_output.jsonl", "_error.jsonl"}[i]
		obj := fileObject{ID: newID("file-"), Object: "file", Bytes: rf.bytes, CreatedAt: unixNow(), Filename: name,
			Purpose: "batch_output", Status: "processed"}
		if err := a.add(obj, rf.f.Name()); err != nil {
			return nil, nil, err
		}
		ids[i] = ptr(obj.ID)
		rf.f = nil
	}
	return ids[0], ids[1], nil
}

// discard removes files that were not published.
func (o *batchOutputs) discard() {
	for _, rf := range []*rowFile{o.out, o.errs} {
		if rf != nil && rf.f != nil {
			_ = rf.f.Close() // not published: dropped
			_ = os.Remove(rf.f.Name())
		}
	}
}

// errLineTooLong marks an input line over maxBodyBytes; the reader skips
// to the next line.
var errLineTooLong = errors.New("line too long")

// lineReader reads an input file's lines, counting them from 1, without
// holding more than the current line.
type lineReader struct {
	r    *bufio.Reader
	buf  []byte
	line int
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next line without its line ending, io.EOF after the
// last, or errLineTooLong for a line over maxBodyBytes plus room for the
// line's other fields.
func (lr *lineReader) next() ([]byte, error) {
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // do not hold on to one huge line
	}
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		if !tooLong {
			lr.buf = append(lr.buf, chunk...)
			if len(lr.buf) > maxBodyBytes+formOverhead {
				tooLong, lr.buf = true, nil
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(lr.buf) == 0 && !tooLong {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		lr.line++
		if tooLong {
			return nil, errLineTooLong
		}
		return bytes.TrimRight(lr.buf, "\r\n"), nil
	}
}

// nextRequest returns the next line that is not blank; the file was
// validated, so it is one.
func (lr *lineReader) nextRequest() ([]byte, error) {
	for {
		raw, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the input file changed while the batch ran")
		}
		if err != nil || len(bytes.TrimSpace(raw)) > 0 {
			return raw, err
		}
	}
}
