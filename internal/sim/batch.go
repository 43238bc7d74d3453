package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// This file holds the simulated Batch API (POST /v1/batches, GET
// /v1/batches[/{id}], POST /v1/batches/{id}/cancel); batch_run.go answers
// a batch's rows.

// Batch statuses, as OpenAI names them.
const (
	BatchValidating = "validating"
	BatchFailed     = "failed"
	BatchInProgress = "in_progress"
	BatchFinalizing = "finalizing"
	BatchCompleted  = "completed"
	BatchExpired    = "expired"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
)

const (
	batchEndpoint = "/v1/chat/completions"
	batchWindow   = "24h"
)

// batch is one batch: its object (guarded by batchAPI.mu) and what its
// runner needs.
type batch struct {
	obj        batchObject
	firstID    string // obj.ID at creation: keys its rows and files (MoveBatch changes obj.ID under the lock)
	seq        int64  // 1 for the first batch created
	expire     bool   // one of the first Config.BatchExpire batches
	created    time.Time
	cancel     chan struct{}
	cancelOnce sync.Once
}

// batchObject is OpenAI's Batch object.
type batchObject struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Endpoint         string            `json:"endpoint"`
	Errors           *batchErrors      `json:"errors"`
	InputFileID      string            `json:"input_file_id"`
	CompletionWindow string            `json:"completion_window"`
	Status           string            `json:"status"`
	OutputFileID     *string           `json:"output_file_id"`
	ErrorFileID      *string           `json:"error_file_id"`
	CreatedAt        int64             `json:"created_at"`
	InProgressAt     *int64            `json:"in_progress_at"`
	ExpiresAt        *int64            `json:"expires_at"`
	FinalizingAt     *int64            `json:"finalizing_at"`
	CompletedAt      *int64            `json:"completed_at"`
	FailedAt         *int64            `json:"failed_at"`
	ExpiredAt        *int64            `json:"expired_at"`
	CancellingAt     *int64            `json:"cancelling_at"`
	CancelledAt      *int64            `json:"cancelled_at"`
	RequestCounts    batchCounts       `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
}

type batchErrors struct {
	Object string       `json:"object"`
	Data   []batchError `json:"data"`
}

// batchError is one reason a batch failed validation; Line counts the
// input file's lines from 1.
type batchError struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Line    *int    `json:"line"`
}

type batchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

type batchList struct {
	Object  string        `json:"object"`
	Data    []batchObject `json:"data"`
	FirstID *string       `json:"first_id"`
	LastID  *string       `json:"last_id"`
	HasMore bool          `json:"has_more"`
}

func finalStatus(status string) bool {
	switch status {
	case BatchFailed, BatchCompleted, BatchExpired, BatchCancelled:
		return true
	}
	return false
}

func (s *Server) batchRoute(w http.ResponseWriter, r *http.Request, id, sub string) {
	switch {
	case sub == "" && r.Method == http.MethodGet:
		if obj, ok := s.batch.snapshot(w, id); ok {
			writeJSON(w, http.StatusOK, obj)
		}
	case sub == "":
		methodNotAllowed(w, http.MethodGet)
	case sub == "cancel" && r.Method == http.MethodPost:
		s.cancelBatch(w, id)
	case sub == "cancel":
		methodNotAllowed(w, http.MethodPost)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	}
}

// snapshot copies a batch's object, answering 404 itself when there is
// none. The object's pointers are never written through, so a shallow
// copy is safe.
func (a *batchAPI) snapshot(w http.ResponseWriter, id string) (batchObject, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.batches[id]
	if b == nil {
		writeAPIError(w, http.StatusNotFound, "batch_id", fmt.Sprintf("no batch with id %q on the simulated endpoint (llmtest)", id))
		return batchObject{}, false
	}
	return b.obj, true
}

type createBatchRequest struct {
	InputFileID      string            `json:"input_file_id"`
	Endpoint         string            `json:"endpoint"`
	CompletionWindow string            `json:"completion_window"`
	Metadata         map[string]string `json:"metadata"`
}

// check validates a create request as OpenAI does, returning the parameter
// at fault and why.
func (req *createBatchRequest) check() (string, string) {
	switch {
	case req.InputFileID == "":
		return "input_file_id", "input_file_id is required"
	case req.Endpoint != batchEndpoint:
		return "endpoint", fmt.Sprintf("endpoint %q: the simulated endpoint (llmtest) batches only %s", req.Endpoint, batchEndpoint)
	case req.CompletionWindow != batchWindow:
		return "completion_window", fmt.Sprintf("completion_window %q: only %q is supported", req.CompletionWindow, batchWindow)
	case len(req.Metadata) > 16:
		return "metadata", fmt.Sprintf("metadata has %d keys; at most 16 are allowed", len(req.Metadata))
	}
	for k, v := range req.Metadata {
		if len(k) > 64 || len(v) > 512 {
			return "metadata", fmt.Sprintf("metadata key %q: keys are at most 64 characters and values at most 512", excerpt(k, 64))
		}
	}
	return "", ""
}

func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "", "reading the request body: "+err.Error())
		return
	}
	var req createBatchRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeAPIError(w, http.StatusBadRequest, "", "the request body is not a valid batch request: "+err.Error())
		return
	}
	if param, msg := req.check(); param != "" {
		writeAPIError(w, http.StatusBadRequest, param, msg)
		return
	}
	a := s.batch
	a.mu.Lock()
	f := a.files[req.InputFileID]
	a.mu.Unlock()
	switch {
	case f == nil:
		writeAPIError(w, http.StatusBadRequest, "input_file_id", fmt.Sprintf("no file with id %q on the simulated endpoint (llmtest)", req.InputFileID))
		return
	case f.obj.Purpose != "batch":
		writeAPIError(w, http.StatusBadRequest, "input_file_id", fmt.Sprintf("file %s has purpose %q; a batch's input needs purpose \"batch\"", f.obj.ID, f.obj.Purpose))
		return
	}
	in, err := os.Open(f.path)
	if err != nil { // deleted meanwhile
		writeAPIError(w, http.StatusBadRequest, "input_file_id", fmt.Sprintf("no file with id %q on the simulated endpoint (llmtest)", req.InputFileID))
		return
	}
	if a.take(&a.lateCreates, s.cfg.BatchCreateLate) {
		s.createLate(req, in)
		writeAPIError(w, http.StatusGatewayTimeout, "", "simulated gateway timeout (llmtest): the upstream did not answer in time; the batch may still be created")
		return
	}
	b, status, msg := s.batch.start(req, int64(s.cfg.BatchExpire))
	if b == nil {
		_ = in.Close() // only read
		writeAPIError(w, status, "", msg)
		return
	}
	a.mu.Lock()
	obj := b.obj // as created, before the runner moves it on
	a.mu.Unlock()
	go s.runBatch(b, in)
	if a.take(&a.lostCreates, s.cfg.BatchLoseCreates) {
		loseReply()
	}
	writeJSON(w, http.StatusOK, obj)
}

// start records a new batch in status "validating" and counts its runner;
// it returns nil, a status and a reason when it cannot take one.
func (a *batchAPI) start(req createBatchRequest, expireFirst int64) (*batch, int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.closed:
		return nil, http.StatusServiceUnavailable, "the simulated endpoint (llmtest) is shutting down"
	case a.open >= maxOpenBatches:
		return nil, http.StatusTooManyRequests, fmt.Sprintf("the simulated endpoint (llmtest) holds at most %d unfinished batches; wait for some to finish", maxOpenBatches)
	}
	now := time.Now()
	seq := int64(len(a.order)) + 1
	b := &batch{seq: seq, expire: seq <= expireFirst, created: now, cancel: make(chan struct{}), obj: batchObject{
		ID: newID("batch_"), Object: "batch", Endpoint: req.Endpoint, InputFileID: req.InputFileID,
		CompletionWindow: req.CompletionWindow, Status: BatchValidating, CreatedAt: now.Unix(),
		ExpiresAt: ptr(now.Add(24 * time.Hour).Unix()), Metadata: req.Metadata,
	}}
	b.firstID = b.obj.ID
	a.batches[b.obj.ID] = b
	a.order = append(a.order, b)
	a.open++
	a.running.Add(1)
	return b, 0, ""
}

// cancelBatch moves an unfinished batch to "cancelling"; its runner stops
// at the next row, keeps the rows answered so far and marks the rest
// batch_cancelled. Cancelling a cancelling batch is a no-op; cancelling a
// finished one is a 409, as OpenAI answers.
func (s *Server) cancelBatch(w http.ResponseWriter, id string) {
	a := s.batch
	a.mu.Lock()
	b := a.batches[id]
	if b == nil {
		a.mu.Unlock()
		writeAPIError(w, http.StatusNotFound, "batch_id", fmt.Sprintf("no batch with id %q on the simulated endpoint (llmtest)", id))
		return
	}
	status := b.obj.Status
	if finalStatus(status) {
		a.mu.Unlock()
		writeAPIError(w, http.StatusConflict, "", fmt.Sprintf("cannot cancel batch %s: its status is %q", id, status))
		return
	}
	if status != BatchCancelling {
		b.obj.Status, b.obj.CancellingAt = BatchCancelling, ptr(unixNow())
		b.cancelOnce.Do(func() { close(b.cancel) })
	}
	obj := b.obj
	a.mu.Unlock()
	writeJSON(w, http.StatusOK, obj)
}

// listBatches answers GET /v1/batches?limit=N&after=ID: batches newest
// first, starting after the batch ID (a cursor from an earlier page).
func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			writeAPIError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit %q: want a whole number from 1 to 100", v))
			return
		}
		limit = n
	}
	a := s.batch
	a.mu.Lock()
	newest := slices.Clone(a.order)
	a.mu.Unlock()
	slices.Reverse(newest)
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(newest, func(b *batch) bool { return b.obj.ID == after })
		if i < 0 {
			writeAPIError(w, http.StatusBadRequest, "after", fmt.Sprintf("after %q: no such batch on the simulated endpoint (llmtest)", after))
			return
		}
		newest = newest[i+1:]
	}
	page := batchList{Object: "list", Data: []batchObject{}, HasMore: len(newest) > limit}
	newest = newest[:min(limit, len(newest))]
	a.mu.Lock()
	for _, b := range newest {
		page.Data = append(page.Data, b.obj)
	}
	a.mu.Unlock()
	if len(page.Data) > 0 {
		page.FirstID, page.LastID = ptr(page.Data[0].ID), ptr(page.Data[len(page.Data)-1].ID)
	}
	writeJSON(w, http.StatusOK, page)
}

// BatchStats counts what the simulated Files and Batch API has done.
type BatchStats struct {
	// FilesUploaded counts files POST /v1/files accepted; UploadsRefused
	// those it refused (over Config.BatchMaxBytes, cut short, not a
	// multipart form, a purpose other than "batch").
	FilesUploaded, UploadsRefused int64
	// BatchesCreated counts batches created; Batches counts them by their
	// current status.
	BatchesCreated int64
	Batches        map[string]int
	// RowsAnswered counts rows answered with status 200 (in an output
	// file), RowsFailed rows answered with an error status (a 500 drawn by
	// Config.BatchRowFailRate, or a 400 for a request the simulator cannot
	// take), RowsExpired and RowsCancelled rows never answered.
	RowsAnswered, RowsFailed, RowsExpired, RowsCancelled int64
	// CustomIDsRepeated counts the custom_ids answered with status 200 in
	// more than one row, over every batch: each one a request paid twice.
	CustomIDsRepeated int64
	// RequestsRepeated counts the distinct requests (by the hash of what
	// determines the answer; see [Entry.Hash]) answered with status 200
	// more than once, online or in a batch: each one a request paid twice.
	// A truncated online reply counts as answered (it was billed).
	// RequestsUntracked counts answers not tracked because over four
	// million distinct requests already were.
	RequestsRepeated, RequestsUntracked int64
}

// BatchStats returns the counts of the Files and Batch API and of
// repeated answers.
func (s *Server) BatchStats() BatchStats {
	a := s.batch
	a.mu.Lock()
	st := BatchStats{FilesUploaded: a.uploaded, UploadsRefused: a.refused, BatchesCreated: int64(len(a.order)),
		Batches: map[string]int{}, RowsAnswered: a.rows.answered, RowsFailed: a.rows.failed,
		RowsExpired: a.rows.expired, RowsCancelled: a.rows.cancelled}
	for _, b := range a.order {
		st.Batches[b.obj.Status]++
	}
	a.mu.Unlock()
	st.CustomIDsRepeated, _ = a.customIDs.summary()
	st.RequestsRepeated, st.RequestsUntracked = s.answers.summary()
	return st
}

// CustomIDAnswers is how many batch rows with this custom_id were answered
// with status 200, over every batch.
func (s *Server) CustomIDAnswers(customID string) int {
	return s.batch.customIDs.get(key(0, "custom_id", customID))
}

// TimesAnswered is how many times the chat-completions request in body was
// answered with status 200, online or as a batch row; body is the request
// as sent (a batch line's "body"). It fails only for a body the endpoint
// could not take.
func (s *Server) TimesAnswered(body []byte) (int, error) {
	_, _, reqKey, problem := parseChat(body)
	if problem != "" {
		return 0, fmt.Errorf("llmtest: %s", problem)
	}
	return s.answers.get(reqKey), nil
}
