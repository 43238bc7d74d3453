package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBatchRowsEqualOnline: a batch's output rows carry, byte for byte, the
// replies the same requests get online, malformed ones included (with
// FaultsByRequest both draw the same fault for a request's first answer),
// and the output and file objects have OpenAI's shape.
func TestBatchRowsEqualOnline(t *testing.T) {
	t.Parallel()
	cfg := Config{Answers: testProblems(), Faults: Faults{Malformed: 0.3}, FaultsByRequest: true, Seed: 5}
	cases := mixedRequests(t, 5)
	c := startBatchServer(t, cfg)
	in := c.mustUpload(inputFile(t, cases))
	if in.Object != "file" || in.Purpose != "batch" || in.Bytes != int64(len(inputFile(t, cases))) || in.Filename != "input.jsonl" ||
		!strings.HasPrefix(in.ID, "file-") || in.CreatedAt == 0 {
		t.Errorf("file object %+v", in)
	}
	created := c.create(in.ID, map[string]string{"run": "r1"})
	if created.Status != BatchValidating || created.Object != "batch" || !strings.HasPrefix(created.ID, "batch_") ||
		created.Endpoint != "/v1/chat/completions" || created.CompletionWindow != "24h" || created.InputFileID != in.ID ||
		created.Metadata["run"] != "r1" || created.ExpiresAt == nil || *created.ExpiresAt != created.CreatedAt+24*3600 {
		t.Errorf("created batch %+v", created)
	}
	b := c.wait(created.ID)
	if b.Status != BatchCompleted || b.RequestCounts != (batchCounts{Total: len(cases), Completed: len(cases)}) ||
		b.OutputFileID == nil || b.ErrorFileID != nil || b.Errors != nil || b.CompletedAt == nil || b.InProgressAt == nil ||
		b.FinalizingAt == nil || b.FailedAt != nil {
		t.Fatalf("finished batch %+v", b)
	}
	status, body := c.do(http.MethodGet, "/files/"+*b.OutputFileID, "", nil)
	var outFile fileObject
	decodeOK(t, status, body, &outFile)
	if outFile.Purpose != "batch_output" || outFile.Filename != b.ID+"_output.jsonl" || outFile.Bytes == 0 {
		t.Errorf("output file object %+v", outFile)
	}
	rows := c.rows(b.OutputFileID)
	checkPartition(t, cases, rows, nil)

	online := New(cfg) // a fresh server: each request's first answer
	plain := New(Config{Answers: testProblems(), Seed: 5})
	malformed := 0
	for i, row := range rows {
		cs := cases[i]
		code, want := call(t, online, cs.req)
		if code != http.StatusOK {
			t.Fatalf("online %s: %d %s", cs.id, code, want)
		}
		if row.Error != nil || row.Response == nil || row.Response.StatusCode != http.StatusOK ||
			!strings.HasPrefix(row.ID, "batch_req_") || !strings.HasPrefix(row.Response.RequestID, "req_") {
			t.Fatalf("row %s: %+v", cs.id, row)
		}
		if !bytes.Equal(row.Response.Body, want) {
			t.Errorf("row %s differs from the online reply:\n batch  %s\n online %s", cs.id, row.Response.Body, want)
		}
		if _, clean := call(t, plain, cs.req); !bytes.Equal(clean, want) {
			malformed++
		}
		var resp chatResponse
		if err := json.Unmarshal(row.Response.Body, &resp); err != nil || resp.Usage.TotalTokens == 0 || len(resp.Choices) != max(cs.req.N, 1) {
			t.Errorf("row %s body: %v %+v", cs.id, err, resp.Usage)
		}
	}
	if malformed == 0 {
		t.Errorf("no row of %d was malformed at rate 0.3: the test does not cover faulty rows", len(rows))
	}

	// Each request was answered once; answering one again online shows.
	st := c.srv.BatchStats()
	if st.RequestsRepeated != 0 || st.CustomIDsRepeated != 0 || st.RowsAnswered != int64(len(cases)) ||
		st.FilesUploaded != 1 || st.BatchesCreated != 1 || st.Batches[BatchCompleted] != 1 {
		t.Errorf("stats %+v", st)
	}
	first, _ := json.Marshal(cases[0].req)
	if n, err := c.srv.TimesAnswered(first); n != 1 || err != nil {
		t.Errorf("TimesAnswered = %d, %v; want 1", n, err)
	}
	if code, _ := call(t, c.srv, cases[0].req); code != http.StatusOK {
		t.Fatalf("online repeat: %d", code)
	}
	if n, _ := c.srv.TimesAnswered(first); n != 2 || c.srv.BatchStats().RequestsRepeated != 1 {
		t.Errorf("after an online repeat: TimesAnswered %d, RequestsRepeated %d; want 2 and 1", n, c.srv.BatchStats().RequestsRepeated)
	}
	if c.srv.CustomIDAnswers(cases[0].id) != 1 || c.srv.CustomIDAnswers("no-such-row") != 0 {
		t.Errorf("CustomIDAnswers %d", c.srv.CustomIDAnswers(cases[0].id))
	}
	if c.srv.Count() != 1 {
		t.Errorf("Count %d: batch rows are not online requests", c.srv.Count())
	}
}

// TestBatchTurnaround: rows are answered evenly over the turnaround, so
// request_counts.completed grows while the batch is in progress and never
// runs ahead of the clock.
func TestBatchTurnaround(t *testing.T) {
	t.Parallel() // its time is the turnaround's; the bound only grows with the clock
	const turnaround, n = 2 * time.Second, 20
	c := startBatchServer(t, Config{Answers: testProblems(), BatchTurnaround: turnaround})
	cases := mixedRequests(t, 4)[:n]
	in := c.mustUpload(inputFile(t, cases))
	start := time.Now()
	id := c.create(in.ID, nil).ID
	partial := false
	last := 0
	for {
		b := c.get(id)
		elapsed := time.Since(start)
		done := b.RequestCounts.Completed
		if bound := int(float64(n) * elapsed.Seconds() / turnaround.Seconds()); done > bound {
			t.Fatalf("%d rows completed %v after creation; at most %d are due", done, elapsed, bound)
		}
		if done < last {
			t.Fatalf("completed went from %d back to %d", last, done)
		}
		last = done
		if b.Status == BatchInProgress && done > 0 && done < n {
			partial = true
			if b.RequestCounts.Total != n || b.InProgressAt == nil || b.OutputFileID != nil {
				t.Errorf("in progress: %+v", b)
			}
		}
		if finalStatus(b.Status) {
			if b.Status != BatchCompleted || done != n {
				t.Fatalf("final %+v", b)
			}
			break
		}
		time.Sleep(40 * time.Millisecond) // a row is due every 100 ms
	}
	if !partial {
		t.Error("never saw the batch in progress with some rows completed")
	}
}

// TestBatchRowFailures: failed rows go to the error file with a 500, the
// others to the output file; resubmitted, failed rows can succeed, and a
// row's reply does not depend on the batch that answered it.
func TestBatchRowFailures(t *testing.T) {
	t.Parallel()
	cfg := Config{Answers: testProblems(), BatchRowFailRate: 0.3, Seed: 2}
	c := startBatchServer(t, cfg)
	cases := mixedRequests(t, 10)
	b := c.run(inputFile(t, cases))
	out, errs := c.rows(b.OutputFileID), c.rows(b.ErrorFileID)
	checkPartition(t, cases, out, errs)
	if b.Status != BatchCompleted || b.RequestCounts.Completed != len(out) || b.RequestCounts.Failed != len(errs) ||
		len(errs) == 0 || len(out) == 0 {
		t.Fatalf("batch %+v: %d output rows, %d error rows", b, len(out), len(errs))
	}
	byID := map[string]request{}
	for _, cs := range cases {
		byID[cs.id] = cs.req
	}
	var retry []batchCase
	for _, r := range errs {
		var env errorEnvelope
		if r.Response == nil || r.Response.StatusCode != http.StatusInternalServerError || r.Error != nil ||
			json.Unmarshal(r.Response.Body, &env) != nil || env.Error.Type != "server_error" {
			t.Errorf("error row %+v", r)
		}
		retry = append(retry, batchCase{id: r.CustomID, req: byID[r.CustomID]})
	}
	b2 := c.run(inputFile(t, retry))
	out2, errs2 := c.rows(b2.OutputFileID), c.rows(b2.ErrorFileID)
	checkPartition(t, retry, out2, errs2)
	if len(out2) == 0 || len(errs2) == len(retry) {
		t.Fatalf("no failed row succeeded on resubmission: %d of %d failed again", len(errs2), len(retry))
	}
	plain := New(Config{Answers: testProblems(), Seed: 2})
	for _, r := range slices.Concat(out, out2) {
		if _, want := call(t, plain, byID[r.CustomID]); !bytes.Equal(r.Response.Body, want) {
			t.Errorf("row %s differs from the online reply", r.CustomID)
		}
	}
	if st := c.srv.BatchStats(); st.CustomIDsRepeated != 0 || st.RequestsRepeated != 0 ||
		st.RowsFailed != int64(len(errs)+len(errs2)) || st.RowsAnswered != int64(len(out)+len(out2)) {
		t.Errorf("stats %+v", st)
	}
}

// TestBatchExpiry: the first BatchExpire batches expire after answering
// the first half of their rows; the rest are batch_expired; the next
// batch completes.
func TestBatchExpiry(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), BatchExpire: 1})
	cases := mixedRequests(t, 2)[:11]
	b := c.run(inputFile(t, cases))
	out, errs := c.rows(b.OutputFileID), c.rows(b.ErrorFileID)
	if b.Status != BatchExpired || b.ExpiredAt == nil || b.CompletedAt != nil || b.RequestCounts != (batchCounts{Total: 11, Completed: 5}) {
		t.Fatalf("batch %+v", b)
	}
	if got, want := customIDs(out), caseIDs(cases[:5]); !slices.Equal(got, want) {
		t.Errorf("answered %v, want the first half %v", got, want)
	}
	if got, want := customIDs(errs), caseIDs(cases[5:]); !slices.Equal(got, want) {
		t.Errorf("expired %v, want %v", got, want)
	}
	for _, r := range errs {
		if r.Response != nil || r.Error == nil || r.Error.Code != "batch_expired" || r.Error.Message == "" {
			t.Errorf("expired row %+v", r)
		}
	}
	b2 := c.run(inputFile(t, cases[5:]))
	if b2.Status != BatchCompleted || b2.RequestCounts.Completed != 6 || b2.ErrorFileID != nil {
		t.Errorf("resubmission %+v", b2)
	}
	if st := c.srv.BatchStats(); st.RowsExpired != 6 || st.RowsAnswered != 11 || st.RequestsRepeated != 0 ||
		st.Batches[BatchExpired] != 1 || st.Batches[BatchCompleted] != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestBatchCancel: a cancelled batch goes "cancelling" then "cancelled",
// keeping the rows answered so far; the rest are batch_cancelled.
func TestBatchCancel(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), BatchTurnaround: time.Minute})
	cases := mixedRequests(t, 10)
	in := c.mustUpload(inputFile(t, cases))
	id := c.create(in.ID, nil).ID
	for c.get(id).RequestCounts.Completed == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	status, body := c.do(http.MethodPost, "/batches/"+id+"/cancel", "", nil)
	var cancelling batchObject
	decodeOK(t, status, body, &cancelling)
	if cancelling.Status != BatchCancelling || cancelling.CancellingAt == nil {
		t.Errorf("cancel answered %+v", cancelling)
	}
	b := c.wait(id)
	out, errs := c.rows(b.OutputFileID), c.rows(b.ErrorFileID)
	if b.Status != BatchCancelled || b.CancelledAt == nil || len(out) == 0 || len(out) != b.RequestCounts.Completed ||
		len(out) == len(cases) {
		t.Fatalf("batch %+v with %d output rows", b, len(out))
	}
	if got, want := customIDs(out), caseIDs(cases[:len(out)]); !slices.Equal(got, want) {
		t.Errorf("answered %v, want the first rows %v", got, want)
	}
	checkPartition(t, cases, out, errs)
	for _, r := range errs {
		if r.Response != nil || r.Error == nil || r.Error.Code != "batch_cancelled" {
			t.Errorf("cancelled row %+v", r)
		}
	}
	if status, body := c.do(http.MethodPost, "/batches/"+id+"/cancel", "", nil); status != http.StatusConflict || !strings.Contains(string(body), "cancelled") {
		t.Errorf("cancelling a cancelled batch: %d %s", status, body)
	}
	if status, _ := c.do(http.MethodPost, "/batches/batch_nope/cancel", "", nil); status != http.StatusNotFound {
		t.Errorf("cancelling an unknown batch: %d", status)
	}
}

// TestBatchValidation: a bad input file makes the batch fail, naming the
// line and the problem as OpenAI's codes do.
func TestBatchValidation(t *testing.T) {
	t.Parallel()
	rendered := renderedPrompts(t)
	good := func(id string) string {
		return string(batchLine(t, id, seeded(rendered[KindRollout], 1, 1)))
	}
	other := seeded(rendered[KindRollout], 1, 1)
	other.Model = "another-model"
	tests := []struct {
		name, file, code string
		line             int
		mention          string
	}{
		{"duplicate custom_id", good("a") + good("b") + good("a"), "duplicate_custom_id", 3, "line 1"},
		{"too many requests", good("a") + good("b") + good("c") + good("d"), "too_many_tasks", 4, "more than 3"},
		{"bad JSON", good("a") + "{not json\n" + good("c"), "invalid_json_line", 2, "not a JSON object"},
		{"blank lines counted", good("a") + "\n\n" + `{"custom_id":"x","method":"POST","url":"/v1/chat/completions"}` + "\n", "invalid_request", 4, "body"},
		{"wrong url", good("a") + strings.Replace(good("b"), "/v1/chat/completions", "/v1/embeddings", 1), "url_mismatch", 2, "/v1/embeddings"},
		{"wrong method", strings.Replace(good("a"), `"POST"`, `"GET"`, 1), "invalid_request", 1, "GET"},
		{"no custom_id", good("a") + strings.Replace(good("b"), `"custom_id":"b"`, `"custom_id":""`, 1), "missing_required_parameter", 2, "custom_id"},
		{"two models", good("a") + string(batchLine(t, "b", other)), "model_mismatch", 2, "line 1"},
	}
	c := startBatchServer(t, Config{Answers: testProblems(), BatchMaxRequests: 3})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := c.run([]byte(tt.file))
			if b.Status != BatchFailed || b.FailedAt == nil || b.Errors == nil || len(b.Errors.Data) == 0 ||
				b.OutputFileID != nil || b.ErrorFileID != nil || b.Errors.Object != "list" {
				t.Fatalf("batch %+v", b)
			}
			e := b.Errors.Data[0]
			if e.Code != tt.code || e.Line == nil || *e.Line != tt.line || !strings.Contains(e.Message, tt.mention) ||
				!strings.Contains(e.Message, fmt.Sprintf("line %d", tt.line)) {
				t.Errorf("error %+v (line %v), want code %s on line %d mentioning %q", e, deref(e.Line), tt.code, tt.line, tt.mention)
			}
		})
	}
	t.Run("empty file", func(t *testing.T) {
		b := c.run([]byte("\n"))
		if b.Status != BatchFailed || b.Errors == nil || b.Errors.Data[0].Code != "empty_file" {
			t.Errorf("batch %+v", b)
		}
	})
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestBatchCreateErrors: create refuses what OpenAI refuses with a 400
// envelope naming the parameter.
func TestBatchCreateErrors(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems()})
	in := c.mustUpload(inputFile(t, mixedRequests(t, 1)))
	tests := []struct {
		name, body, param string
		status            int
	}{
		{"unknown file", `{"input_file_id":"file-nope","endpoint":"/v1/chat/completions","completion_window":"24h"}`, "input_file_id", 400},
		{"no file", `{"endpoint":"/v1/chat/completions","completion_window":"24h"}`, "input_file_id", 400},
		{"wrong endpoint", `{"input_file_id":"` + in.ID + `","endpoint":"/v1/embeddings","completion_window":"24h"}`, "endpoint", 400},
		{"wrong window", `{"input_file_id":"` + in.ID + `","endpoint":"/v1/chat/completions","completion_window":"1h"}`, "completion_window", 400},
		{"too much metadata", `{"input_file_id":"` + in.ID + `","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"k":"` +
			strings.Repeat("v", 513) + `"}}`, "metadata", 400},
	}
	for _, tt := range tests {
		status, body := c.do(http.MethodPost, "/batches", "application/json", strings.NewReader(tt.body))
		var env errorEnvelope
		if status != tt.status || json.Unmarshal(body, &env) != nil || env.Error.Param == nil || *env.Error.Param != tt.param ||
			env.Error.Type != "invalid_request_error" || env.Error.Message == "" {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	if status, _ := c.do(http.MethodGet, "/batches/batch_nope", "", nil); status != http.StatusNotFound {
		t.Errorf("GET unknown batch: %d", status)
	}
	if c.srv.BatchStats().BatchesCreated != 0 {
		t.Error("a refused create made a batch")
	}
}

// TestFileUploads: the file API's refusals leave no file behind, and a
// stored file reads back byte for byte and can be deleted.
func TestFileUploads(t *testing.T) {
	c := startBatchServer(t, Config{BatchMaxBytes: 1000})
	full := bytes.Repeat([]byte("x"), 1000)
	f := c.mustUpload(full)
	if f.Bytes != 1000 {
		t.Errorf("file object %+v", f)
	}
	status, body := c.do(http.MethodGet, "/files/"+f.ID+"/content", "", nil)
	if status != http.StatusOK || !bytes.Equal(body, full) {
		t.Errorf("content: %d, %d bytes", status, len(body))
	}
	refusals := []struct {
		name, contentType string
		body              *bytes.Buffer
		param             string
	}{}
	add := func(name, purpose string, content []byte, param string) {
		ct, b := multipartBody(t, purpose, "in.jsonl", content)
		refusals = append(refusals, struct {
			name, contentType string
			body              *bytes.Buffer
			param             string
		}{name, ct, b, param})
	}
	add("over the limit", "batch", append(full, 'y'), "file")
	add("wrong purpose", "fine-tune", []byte("{}\n"), "purpose")
	add("no purpose", "", []byte("{}\n"), "purpose")
	add("no file", "batch", nil, "file")
	refusals = append(refusals, struct {
		name, contentType string
		body              *bytes.Buffer
		param             string
	}{"not multipart", "application/json", bytes.NewBufferString(`{"purpose":"batch"}`), ""})
	for _, r := range refusals {
		status, body := c.do(http.MethodPost, "/files", r.contentType, r.body)
		var env errorEnvelope
		if status != http.StatusBadRequest || json.Unmarshal(body, &env) != nil || env.Error.Message == "" ||
			(r.param != "" && (env.Error.Param == nil || *env.Error.Param != r.param)) {
			t.Errorf("%s: %d %s", r.name, status, body)
		}
	}
	// A client that dies mid-upload leaves no file.
	halfUpload(t, c.base)
	deadline := time.Now().Add(time.Minute)
	for c.srv.BatchStats().UploadsRefused < int64(len(refusals)+1) {
		if time.Now().After(deadline) {
			t.Fatalf("the cut upload was not refused: %+v", c.srv.BatchStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	entries, err := os.ReadDir(c.srv.batch.dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != f.ID {
		t.Errorf("files on disk %v, %v; want only %s", entries, err, f.ID)
	}
	if st := c.srv.BatchStats(); st.FilesUploaded != 1 {
		t.Errorf("stats %+v", st)
	}
	status, body = c.do(http.MethodDelete, "/files/"+f.ID, "", nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"deleted":true`) {
		t.Errorf("delete: %d %s", status, body)
	}
	for _, path := range []string{"/files/" + f.ID, "/files/" + f.ID + "/content"} {
		if status, _ := c.do(http.MethodGet, path, "", nil); status != http.StatusNotFound {
			t.Errorf("GET %s after delete: %d", path, status)
		}
	}
	if entries, _ := os.ReadDir(c.srv.batch.dir); len(entries) != 0 {
		t.Errorf("files on disk after delete: %v", entries)
	}
}

// halfUpload sends part of a multipart upload and hangs up.
func halfUpload(t *testing.T, base string) {
	t.Helper()
	host := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/v1")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	part := "--B\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n" + strings.Repeat("y", 500)
	_, err = fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 5000\r\n\r\n%s", host, part)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// TestBatchList: the list is newest first, pages with after, and finds a
// batch by its metadata.
func TestBatchList(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems()})
	in := c.mustUpload(inputFile(t, mixedRequests(t, 1)))
	var ids []string
	for i := range 5 {
		ids = append(ids, c.create(in.ID, map[string]string{"run": fmt.Sprint("r", i)}).ID)
	}
	slices.Reverse(ids) // newest first
	page := func(query string) batchList {
		t.Helper()
		status, body := c.do(http.MethodGet, "/batches"+query, "", nil)
		var l batchList
		decodeOK(t, status, body, &l)
		return l
	}
	listed := func(l batchList) []string {
		var out []string
		for _, b := range l.Data {
			out = append(out, b.ID)
		}
		return out
	}
	l := page("?limit=2")
	if !slices.Equal(listed(l), ids[:2]) || !l.HasMore || *l.FirstID != ids[0] || *l.LastID != ids[1] || l.Object != "list" ||
		l.Data[0].Metadata["run"] != "r4" {
		t.Errorf("first page %v %+v, want %v", listed(l), l, ids[:2])
	}
	l = page("?limit=2&after=" + ids[1])
	if !slices.Equal(listed(l), ids[2:4]) || !l.HasMore {
		t.Errorf("second page %v, want %v", listed(l), ids[2:4])
	}
	l = page("?limit=2&after=" + ids[3])
	if !slices.Equal(listed(l), ids[4:]) || l.HasMore {
		t.Errorf("last page %v (has_more %v), want %v", listed(l), l.HasMore, ids[4:])
	}
	if l = page("?after=" + ids[4]); len(l.Data) != 0 || l.FirstID != nil || l.HasMore {
		t.Errorf("past the end: %+v", l)
	}
	if l = page(""); !slices.Equal(listed(l), ids) {
		t.Errorf("default page %v, want %v", listed(l), ids)
	}
	for _, q := range []string{"?after=batch_nope", "?limit=0", "?limit=101", "?limit=x"} {
		if status, _ := c.do(http.MethodGet, "/batches"+q, "", nil); status != http.StatusBadRequest {
			t.Errorf("GET /batches%s: %d, want 400", q, status)
		}
	}
}

// TestBatchClose: Close stops running batches and removes the files;
// nothing is left in BatchDir.
func TestBatchClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := New(Config{Answers: testProblems(), BatchDir: dir, BatchTurnaround: time.Hour})
	srv := &http.Server{Handler: s}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	c := &batchAPIClient{t: t, base: "http://" + ln.Addr().String() + "/v1", srv: s}
	in := c.mustUpload(inputFile(t, mixedRequests(t, 2)))
	b := c.create(in.ID, nil)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("BatchDir holds %v, want one server directory", entries)
	}
	s.Close() // returns only once the running batch has stopped
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("BatchDir after Close holds %v", entries)
	}
	if status, _ := c.upload([]byte("{}\n")); status == http.StatusOK {
		t.Error("an upload after Close succeeded")
	}
	if got := c.get(b.ID).Status; finalStatus(got) {
		t.Errorf("the batch stopped by Close is %q; it should stay unfinished, as the server went away", got)
	}
}

// TestBatchOpenLimit: the server holds a bounded number of unfinished
// batches; one more gets a 429, and a finished batch frees its place.
func TestBatchOpenLimit(t *testing.T) {
	t.Parallel()
	c := startBatchServer(t, Config{Answers: testProblems(), BatchTurnaround: time.Hour})
	in := c.mustUpload(inputFile(t, mixedRequests(t, 1)[:1]))
	var first string
	for i := range maxOpenBatches {
		id := c.create(in.ID, nil).ID
		if i == 0 {
			first = id
		}
	}
	req := `{"input_file_id":"` + in.ID + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`
	if status, body := c.do(http.MethodPost, "/batches", "application/json", strings.NewReader(req)); status != http.StatusTooManyRequests {
		t.Fatalf("batch %d: %d %s, want 429", maxOpenBatches+1, status, body)
	}
	c.do(http.MethodPost, "/batches/"+first+"/cancel", "", nil)
	c.wait(first)
	if status, body := c.do(http.MethodPost, "/batches", "application/json", strings.NewReader(req)); status != http.StatusOK {
		t.Fatalf("after one finished: %d %s", status, body)
	}
}
