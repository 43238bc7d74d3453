package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// batchAPIClient speaks the Files and Batch API to a server over loopback
// HTTP, as a real client would.
type batchAPIClient struct {
	t    testing.TB
	base string // http://127.0.0.1:PORT/v1
	srv  *Server
}

func startBatchServer(t testing.TB, cfg Config) *batchAPIClient {
	t.Helper()
	srv, base, stop, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &batchAPIClient{t: t, base: base, srv: srv}
}

// do sends a request and returns the status and body.
func (c *batchAPIClient) do(method, path, contentType string, body io.Reader) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: reading the reply: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// multipartBody is an upload form with the given purpose and file.
func multipartBody(t testing.TB, purpose, filename string, content []byte) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if purpose != "" {
		if err := mw.WriteField("purpose", purpose); err != nil {
			t.Fatal(err)
		}
	}
	if content != nil {
		fw, err := mw.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(content); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &buf
}

// upload sends content as a batch input file and returns the status and
// body of the reply.
func (c *batchAPIClient) upload(content []byte) (int, []byte) {
	c.t.Helper()
	ct, body := multipartBody(c.t, "batch", "input.jsonl", content)
	return c.do(http.MethodPost, "/files", ct, body)
}

// mustUpload uploads content and returns the file object.
func (c *batchAPIClient) mustUpload(content []byte) fileObject {
	c.t.Helper()
	status, body := c.upload(content)
	var f fileObject
	decodeOK(c.t, status, body, &f)
	return f
}

func decodeOK(t testing.TB, status int, body []byte, v any) {
	t.Helper()
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
}

// create starts a batch over an uploaded file.
func (c *batchAPIClient) create(fileID string, metadata map[string]string) batchObject {
	c.t.Helper()
	req, err := json.Marshal(map[string]any{"input_file_id": fileID, "endpoint": "/v1/chat/completions",
		"completion_window": "24h", "metadata": metadata})
	if err != nil {
		c.t.Fatal(err)
	}
	status, body := c.do(http.MethodPost, "/batches", "application/json", bytes.NewReader(req))
	var b batchObject
	decodeOK(c.t, status, body, &b)
	return b
}

// run uploads lines, creates a batch and waits for its final status.
func (c *batchAPIClient) run(lines []byte) batchObject {
	c.t.Helper()
	return c.wait(c.create(c.mustUpload(lines).ID, nil).ID)
}

func (c *batchAPIClient) get(id string) batchObject {
	c.t.Helper()
	status, body := c.do(http.MethodGet, "/batches/"+id, "", nil)
	var b batchObject
	decodeOK(c.t, status, body, &b)
	return b
}

// wait polls a batch until its status is final; the deadline only stops a
// hung test, it is not a speed requirement.
func (c *batchAPIClient) wait(id string) batchObject {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b := c.get(id)
		if finalStatus(b.Status) {
			return b
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("batch %s still %s after 2 minutes: %+v", id, b.Status, b.RequestCounts)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rows downloads a file of batch output lines; a nil id gives none.
func (c *batchAPIClient) rows(id *string) []batchOutputLine {
	c.t.Helper()
	if id == nil {
		return nil
	}
	status, body := c.do(http.MethodGet, "/files/"+*id+"/content", "", nil)
	if status != http.StatusOK {
		c.t.Fatalf("GET content of %s: %d %s", *id, status, body)
	}
	var out []batchOutputLine
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var row batchOutputLine
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			c.t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		out = append(out, row)
	}
	return out
}

// batchLine is one input line.
func batchLine(t testing.TB, customID string, body any) []byte {
	t.Helper()
	line, err := json.Marshal(map[string]any{"custom_id": customID, "method": "POST", "url": "/v1/chat/completions", "body": body})
	if err != nil {
		t.Fatal(err)
	}
	return append(line, '\n')
}

// batchCase is a batch row and its request.
type batchCase struct {
	id  string
	req request
}

// mixedRequests are requests of every template kind, several seeds and
// sample counts each.
func mixedRequests(t testing.TB, perKind int) []batchCase {
	t.Helper()
	rendered := renderedPrompts(t)
	kinds := []Kind{KindRollout, KindDistillSRaR, KindDistillFactualProcess, KindJudgeItem, KindJudgeBatch, KindSatisfy}
	var out []batchCase
	for _, k := range kinds {
		for i := range perKind {
			out = append(out, batchCase{id: fmt.Sprintf("%s-%d", k, i), req: seeded(rendered[k], int64(100+i), 1+i%3)})
		}
	}
	return out
}

func inputFile(t testing.TB, cases []batchCase) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, c := range cases {
		buf.Write(batchLine(t, c.id, c.req))
	}
	return buf.Bytes()
}

func customIDs(rows []batchOutputLine) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.CustomID
	}
	return ids
}

func caseIDs(cases []batchCase) []string {
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = c.id
	}
	return ids
}

// checkPartition fails unless every case appears exactly once over the
// output and error rows, in input order within each.
func checkPartition(t testing.TB, cases []batchCase, out, errs []batchOutputLine) {
	t.Helper()
	order := map[string]int{}
	for i, c := range cases {
		order[c.id] = i
	}
	seen := map[string]bool{}
	for _, rows := range [][]batchOutputLine{out, errs} {
		last := -1
		for _, r := range rows {
			i, ok := order[r.CustomID]
			switch {
			case !ok:
				t.Errorf("row for unknown custom_id %q", r.CustomID)
			case seen[r.CustomID]:
				t.Errorf("custom_id %q answered twice", r.CustomID)
			case i < last:
				t.Errorf("custom_id %q out of input order", r.CustomID)
			}
			seen[r.CustomID], last = true, i
		}
	}
	if len(seen) != len(cases) {
		missing := slices.DeleteFunc(caseIDs(cases), func(id string) bool { return seen[id] })
		t.Errorf("%d of %d rows have no line in either file; missing %s", len(cases)-len(seen), len(cases), strings.Join(missing, ", "))
	}
}
