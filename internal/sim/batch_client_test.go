package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestBatchWithGoOpenAI: a third-party OpenAI client (go-openai) runs the
// whole Files and Batch API against the simulated endpoint: upload, create
// with metadata, poll, read the output, page the list, cancel, and its
// typed error for a refused request. Its rows decode as chat completions
// equal to the online replies it gets for the same requests.
func TestBatchWithGoOpenAI(t *testing.T) {
	c := startBatchServer(t, Config{Answers: testProblems()})
	client := newClient(c.base)
	ctx := t.Context()
	rendered := renderedPrompts(t)
	upload := openai.UploadBatchFileRequest{}
	var requests []openai.ChatCompletionRequest
	for i, kind := range []Kind{KindRollout, KindDistillSRaR, KindJudgeBatch, KindSatisfy} {
		req := openai.ChatCompletionRequest{Model: "sim-test", Messages: openaiMessages(rendered[kind]), Seed: ptr(i)}
		requests = append(requests, req)
		upload.AddChatCompletion(fmt.Sprint("req-", i), req)
	}
	file, err := client.UploadBatchFile(ctx, upload) // no newline after the last line
	if err != nil || file.Purpose != "batch" || file.Bytes == 0 {
		t.Fatalf("upload: %+v, %v", file, err)
	}
	created, err := client.CreateBatch(ctx, openai.CreateBatchRequest{InputFileID: file.ID,
		Endpoint: openai.BatchEndpointChatCompletions, Metadata: map[string]any{"run": "go-openai"}})
	if err != nil || created.Status != BatchValidating {
		t.Fatalf("create: %+v, %v", created.Batch, err)
	}
	b := created.Batch
	for deadline := time.Now().Add(2 * time.Minute); !finalStatus(b.Status); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s", b.Status)
		}
		r, err := client.RetrieveBatch(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		b = r.Batch
	}
	if b.Status != BatchCompleted || b.RequestCounts.Completed != len(requests) || b.OutputFileID == nil || b.Metadata["run"] != "go-openai" {
		t.Fatalf("batch %+v", b)
	}
	content, err := client.GetFileContent(ctx, *b.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	defer content.Close()
	sc := bufio.NewScanner(content)
	sc.Buffer(nil, 16<<20)
	rows := 0
	for ; sc.Scan(); rows++ {
		var row struct {
			CustomID string `json:"custom_id"`
			Response struct {
				StatusCode int                           `json:"status_code"`
				Body       openai.ChatCompletionResponse `json:"body"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		online, err := client.CreateChatCompletion(ctx, requests[rows])
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(row.Response.Body.Choices)
		want, _ := json.Marshal(online.Choices)
		if row.CustomID != fmt.Sprint("req-", rows) || row.Response.StatusCode != 200 || !bytes.Equal(got, want) ||
			row.Response.Body.Usage != online.Usage {
			t.Errorf("row %d (%s) differs from the online reply", rows, row.CustomID)
		}
	}
	if rows != len(requests) {
		t.Errorf("%d output rows, want %d", rows, len(requests))
	}

	second, err := client.CreateBatch(ctx, openai.CreateBatchRequest{InputFileID: file.ID, Endpoint: openai.BatchEndpointChatCompletions})
	if err != nil {
		t.Fatal(err)
	}
	limit := 1
	page, err := client.ListBatch(ctx, nil, &limit)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != second.ID || !page.HasMore || page.LastID != second.ID {
		t.Fatalf("first page %+v, %v", page, err)
	}
	page, err = client.ListBatch(ctx, &page.LastID, &limit)
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != b.ID || page.HasMore {
		t.Fatalf("second page %+v, %v", page, err)
	}
	if _, err := client.CancelBatch(ctx, b.ID); err == nil {
		t.Error("cancelling a completed batch succeeded")
	} else if apiErr, ok := errors.AsType[*openai.APIError](err); !ok || apiErr.HTTPStatusCode != 409 {
		t.Errorf("cancelling a completed batch: %v, want a 409 APIError", err)
	}
	if _, err := client.RetrieveBatch(ctx, "batch_nope"); err == nil {
		t.Error("retrieving an unknown batch succeeded")
	}
}
