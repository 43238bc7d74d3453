package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBillCountsWhatTheProviderGenerated: the bill has the usage of every
// answer the provider sent with status 200, the truncated ones too (a
// reply lost after it was generated is billed), and of every batch row
// answered; not of a 500 or a 429.
func TestBillCountsWhatTheProviderGenerated(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), Faults: Faults{Truncate: 0.3, ServerError: 0.2, RateLimited: 0.1}, Seed: 3})
	cases := mixedRequests(t, 4)
	var whole, cut, prompt int64
	for _, cs := range cases {
		body, _ := json.Marshal(cs.req)
		resp, err := http.Post(c.base+"/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK && rerr != nil:
			cut++
		case resp.StatusCode == http.StatusOK:
			whole++
			var r chatResponse
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			prompt += int64(r.Usage.PromptTokens)
		}
	}
	if cut == 0 || whole == 0 {
		t.Fatalf("%d whole and %d cut replies: the test needs both", whole, cut)
	}
	online := sumUsage(c.srv.Bill().Online)
	if online.Responses != whole+cut || online.PromptTokens <= prompt || online.CompletionTokens == 0 {
		t.Errorf("online bill %+v; the client read %d whole replies (%d prompt tokens) and %d cut ones", online, whole, prompt, cut)
	}
	b := c.run(inputFile(t, cases))
	if b.Status != BatchCompleted {
		t.Fatalf("batch %s", b.Status)
	}
	batch := sumUsage(c.srv.Bill().Batch)
	if batch.Responses != int64(len(cases)) || batch.PromptTokens == 0 {
		t.Errorf("batch bill %+v for %d rows", batch, len(cases))
	}
	if total := c.srv.Bill().Total(); total.Responses != online.Responses+batch.Responses {
		t.Errorf("Total %+v", total)
	}
}

func sumUsage(m map[string]Usage) Usage {
	var t Usage
	for _, u := range m {
		t.add(u)
	}
	return t
}

// TestBatchCreateLate: a create answered 504 still makes its batch, which
// the list shows only after the lag; the next create is answered.
func TestBatchCreateLate(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), BatchCreateLate: 1, BatchCreateLag: 200 * time.Millisecond})
	in := c.mustUpload(inputFile(t, mixedRequests(t, 1)))
	req, _ := json.Marshal(map[string]any{"input_file_id": in.ID, "endpoint": "/v1/chat/completions", "completion_window": "24h",
		"metadata": map[string]string{"marker": "m1"}})
	sent := time.Now()
	status, body := c.do(http.MethodPost, "/batches", "application/json", bytes.NewReader(req))
	if status != http.StatusGatewayTimeout {
		t.Fatalf("the first create: %d %s, want 504", status, body)
	}
	if l := c.list(); len(l) != 0 && time.Since(sent) < 200*time.Millisecond {
		t.Errorf("the late batch is listed at once: %+v", l)
	}
	var late []batchObject
	for deadline := time.Now().Add(time.Minute); len(late) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		late = c.list()
	}
	if len(late) != 1 || late[0].InputFileID != in.ID || late[0].Metadata["marker"] != "m1" {
		t.Fatalf("after the lag the list holds %+v", late)
	}
	if c.wait(late[0].ID).Status != BatchCompleted {
		t.Error("the late batch did not complete")
	}
	if second := c.create(in.ID, nil); second.ID == "" {
		t.Error("the second create was not answered")
	}
}

// list is the first page of the batch list.
func (c *batchAPIClient) list() []batchObject {
	c.t.Helper()
	status, body := c.do(http.MethodGet, "/batches?limit=100", "", nil)
	var l batchList
	decodeOK(c.t, status, body, &l)
	return l.Data
}

// TestLostReplies: an upload or a create whose reply is lost did its
// work: the file is stored (and listed), the batch made.
func TestLostReplies(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), BatchLoseUploads: 1, BatchLoseCreates: 1})
	ct, body := multipartBody(t, "batch", "rubricforge-x.jsonl", inputFile(t, mixedRequests(t, 1)))
	if _, err := http.Post(c.base+"/files", ct, body); err == nil {
		t.Fatal("the first upload's reply arrived")
	}
	status, raw := c.do(http.MethodGet, "/files?purpose=batch", "", nil)
	var files fileList
	decodeOK(t, status, raw, &files)
	if len(files.Data) != 1 || files.Data[0].Filename != "rubricforge-x.jsonl" {
		t.Fatalf("files after a lost upload reply: %+v", files.Data)
	}
	req, _ := json.Marshal(map[string]any{"input_file_id": files.Data[0].ID, "endpoint": "/v1/chat/completions", "completion_window": "24h"})
	if _, err := http.Post(c.base+"/batches", "application/json", bytes.NewReader(req)); err == nil {
		t.Fatal("the first create's reply arrived")
	}
	if l := c.list(); len(l) != 1 || l[0].InputFileID != files.Data[0].ID {
		t.Errorf("batches after a lost create reply: %+v", l)
	}
	if st := c.srv.BatchStats(); st.FilesUploaded != 1 || st.BatchesCreated != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestListFiles: files newest first (or oldest with order=asc), of one
// purpose when asked, in pages with a cursor.
func TestListFiles(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{})
	var ids []string
	for i := range 3 {
		ids = append(ids, c.mustUpload([]byte(fmt.Sprintf("file %d\n", i))).ID)
	}
	page := func(q string) fileList {
		status, raw := c.do(http.MethodGet, "/files"+q, "", nil)
		var l fileList
		decodeOK(t, status, raw, &l)
		return l
	}
	if l := page("?limit=2"); len(l.Data) != 2 || l.Data[0].ID != ids[2] || !l.HasMore {
		t.Errorf("first page %+v", l)
	}
	if l := page("?limit=2&after=" + ids[1]); len(l.Data) != 1 || l.Data[0].ID != ids[0] || l.HasMore {
		t.Errorf("second page %+v", l)
	}
	if l := page("?order=asc"); len(l.Data) != 3 || l.Data[0].ID != ids[0] {
		t.Errorf("oldest first %+v", l)
	}
	if l := page("?purpose=batch_output"); len(l.Data) != 0 {
		t.Errorf("output files %+v", l)
	}
	if status, _ := c.do(http.MethodGet, "/files?limit=0", "", nil); status != http.StatusBadRequest {
		t.Errorf("limit=0: %d", status)
	}
}

// TestSeedMoveDropBatches: others' batches come first in the list; a
// moved batch answers 404 under its old id and runs on under its new one;
// a dropped batch is gone.
func TestSeedMoveDropBatches(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), BatchTurnaround: time.Hour})
	mine := c.create(c.mustUpload(inputFile(t, mixedRequests(t, 1))).ID, map[string]string{"k": "v"})
	c.srv.SeedBatches(150)
	if l := c.list(); len(l) != 100 || l[0].ID == mine.ID || l[0].Status != BatchCompleted {
		t.Fatalf("after 150 others the first page holds %d, the first %+v", len(l), l[0])
	}
	if ids := c.srv.BatchIDs(); len(ids) != 151 || ids[0] != mine.ID {
		t.Errorf("BatchIDs: %d, the first %s", len(ids), ids[0])
	}
	moved, err := c.srv.MoveBatch(mine.ID)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := c.do(http.MethodGet, "/batches/"+mine.ID, "", nil); status != http.StatusNotFound {
		t.Errorf("GET of the old id: %d, want 404", status)
	}
	if b := c.get(moved); b.InputFileID != mine.InputFileID || b.Metadata["k"] != "v" {
		t.Errorf("the moved batch %+v", b)
	}
	if err := c.srv.DropBatch(moved); err != nil {
		t.Fatal(err)
	}
	if status, _ := c.do(http.MethodGet, "/batches/"+moved, "", nil); status != http.StatusNotFound {
		t.Errorf("GET of a dropped batch: %d, want 404", status)
	}
	if err := c.srv.DropBatch("batch_nope"); err == nil || !strings.Contains(err.Error(), "no batch") {
		t.Errorf("DropBatch of no batch: %v", err)
	}
	if _, err := c.srv.MoveBatch("batch_nope"); err == nil {
		t.Errorf("MoveBatch of no batch: %v", err)
	}
}
