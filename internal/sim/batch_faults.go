package sim

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"
)

// This file holds what the simulated Files and Batch API does to test a
// client's care with money: replies lost after the work was done, a create
// answered 504 while the batch is still made, a list of files, batches of
// others between a client's own, and batch ids the provider stops knowing.

// take counts one more of a fault whose first limit occurrences happen,
// and reports whether this one does.
func (a *batchAPI) take(n *int, limit int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if *n >= limit {
		return false
	}
	*n++
	return true
}

// loseReply ends a request with no reply: the connection is closed, as a
// proxy or a network that drops it after the provider did the work.
func loseReply() { panic(http.ErrAbortHandler) }

// createLate makes the batch of req after Config.BatchCreateLag, as a
// provider behind a gateway that already answered 504 does.
func (s *Server) createLate(req createBatchRequest, in *os.File) {
	a := s.batch
	a.running.Add(1)
	go func() {
		defer a.running.Done()
		t := time.NewTimer(s.cfg.BatchCreateLag)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.closed:
			_ = in.Close() // only read; the simulator stopped
			return
		}
		b, _, _ := a.start(req, int64(s.cfg.BatchExpire))
		if b == nil {
			_ = in.Close() // only read; no batch was made
			return
		}
		go s.runBatch(b, in)
	}()
}

// fileList is OpenAI's list of files.
type fileList struct {
	Object  string       `json:"object"`
	Data    []fileObject `json:"data"`
	FirstID *string      `json:"first_id"`
	LastID  *string      `json:"last_id"`
	HasMore bool         `json:"has_more"`
}

// listFiles answers GET /v1/files?purpose=P&limit=N&after=ID&order=desc|asc:
// the files, newest first by default, of one purpose when asked, starting
// after the file ID.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 10000
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeAPIError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit %q: want a whole number from 1 to 10000", v))
			return
		}
		limit = n
	}
	order := q.Get("order")
	if order == "" {
		order = "desc"
	}
	if order != "desc" && order != "asc" {
		writeAPIError(w, http.StatusBadRequest, "order", fmt.Sprintf("order %q: want asc or desc", order))
		return
	}
	a := s.batch
	a.mu.Lock()
	var files []fileObject
	for _, id := range a.fileOrder {
		if f := a.files[id]; f != nil && (q.Get("purpose") == "" || f.obj.Purpose == q.Get("purpose")) {
			files = append(files, f.obj)
		}
	}
	a.mu.Unlock()
	if order == "desc" {
		slices.Reverse(files)
	}
	if after := q.Get("after"); after != "" {
		i := slices.IndexFunc(files, func(f fileObject) bool { return f.ID == after })
		if i < 0 {
			writeAPIError(w, http.StatusBadRequest, "after", fmt.Sprintf("after %q: no such file on the simulated endpoint (llmtest)", after))
			return
		}
		files = files[i+1:]
	}
	page := fileList{Object: "list", Data: files[:min(limit, len(files))], HasMore: len(files) > limit}
	if page.Data == nil {
		page.Data = []fileObject{}
	}
	if len(page.Data) > 0 {
		page.FirstID, page.LastID = ptr(page.Data[0].ID), ptr(page.Data[len(page.Data)-1].ID)
	}
	writeJSON(w, http.StatusOK, page)
}

// SeedBatches adds n finished batches of someone else (another input file,
// no metadata) to the account, newest first in the list: the batches other
// runs and people make between a run's own.
func (s *Server) SeedBatches(n int) {
	a := s.batch
	a.mu.Lock()
	defer a.mu.Unlock()
	now := unixNow()
	for range n {
		b := &batch{seq: int64(len(a.order)) + 1, created: time.Now(), cancel: make(chan struct{}), obj: batchObject{
			ID: newID("batch_"), Object: "batch", Endpoint: batchEndpoint, InputFileID: newID("file-"),
			CompletionWindow: batchWindow, Status: BatchCompleted, CreatedAt: now, CompletedAt: ptr(now),
		}}
		b.cancelOnce.Do(func() { close(b.cancel) })
		a.batches[b.obj.ID] = b
		a.order = append(a.order, b)
	}
}

// MoveBatch gives the batch id a new id, as a provider that migrates its
// batches does: GET and cancel of the old id answer 404; the batch, its
// input file and metadata are listed under the new one, which it returns.
func (s *Server) MoveBatch(id string) (string, error) {
	a := s.batch
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.batches[id]
	if b == nil {
		return "", fmt.Errorf("llmtest: no batch %q", id)
	}
	delete(a.batches, id)
	b.obj.ID = newID("batch_")
	a.batches[b.obj.ID] = b
	return b.obj.ID, nil
}

// DropBatch makes the provider forget the batch id: it stops answering its
// rows, GET and cancel answer 404, and the list no longer shows it.
func (s *Server) DropBatch(id string) error {
	a := s.batch
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.batches[id]
	if b == nil {
		return fmt.Errorf("llmtest: no batch %q", id)
	}
	b.cancelOnce.Do(func() { close(b.cancel) })
	delete(a.batches, id)
	a.order = slices.DeleteFunc(a.order, func(o *batch) bool { return o == b })
	return nil
}

// BatchIDs lists the ids of the batches the account holds, oldest first.
func (s *Server) BatchIDs() []string {
	a := s.batch
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, 0, len(a.order))
	for _, b := range a.order {
		ids = append(ids, b.obj.ID)
	}
	return ids
}
