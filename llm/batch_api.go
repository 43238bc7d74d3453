package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rubricforge/rubricforge/internal/fsys"
)

// BatchAPI speaks OpenAI's Files and Batch APIs (/v1/files, /v1/batches)
// to one endpoint: it uploads batch input files, creates, reads, lists and
// cancels batches, and downloads their output and error files. Transient
// failures (429, 5xx, resets) are retried with backoff; a 4xx is returned.
type BatchAPI struct {
	base  string // without a trailing slash, e.g. https://api.openai.com/v1
	httpc *http.Client
	red   redactor
	key   string
	opt   Options
}

// NewBatchAPI returns the batch API of ep. Of opt it uses the retry
// settings and HTTPClient.
func NewBatchAPI(ep Endpoint, opt Options) (*BatchAPI, error) {
	u, err := url.Parse(ep.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm: endpoint base URL %s: want http(s)://host[:port]/v1", redactURL(ep.BaseURL))
	}
	if err := opt.fill(); err != nil {
		return nil, err
	}
	httpc := opt.HTTPClient
	if httpc == nil {
		httpc = &http.Client{Transport: NewTransport(4)}
	}
	return &BatchAPI{base: strings.TrimRight(ep.BaseURL, "/"), httpc: httpc, red: redactor{key: ep.APIKey}, key: ep.APIKey, opt: opt}, nil
}

// Available reports whether the endpoint has a Batch API: whether it
// lists batches (vLLM and SGLang servers answer 404).
func (a *BatchAPI) Available(ctx context.Context) (bool, error) {
	err := a.retry(ctx, "listing batches", func(ctx context.Context) (*http.Response, error) {
		return a.send(ctx, http.MethodGet, "/batches?limit=1", nil)
	}, nil)
	var e *Error
	if errors.As(err, &e) && (e.Status == 404 || e.Status == 405) {
		return false, nil
	}
	return err == nil, err
}

// Base is the endpoint's base URL, without credentials.
func (a *BatchAPI) Base() string { return redactURL(a.base) }

// BatchObject is OpenAI's batch object, as far as this package reads it.
type BatchObject struct {
	ID               string            `json:"id"`
	Status           string            `json:"status"`
	InputFileID      string            `json:"input_file_id"`
	OutputFileID     string            `json:"output_file_id"`
	ErrorFileID      string            `json:"error_file_id"`
	CompletionWindow string            `json:"completion_window"`
	CreatedAt        int64             `json:"created_at"`
	RequestCounts    BatchCounts       `json:"request_counts"`
	Metadata         map[string]string `json:"metadata"`
	Errors           *struct {
		Data []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Line    *int   `json:"line"`
		} `json:"data"`
	} `json:"errors"`
}

// BatchCounts are a batch's request counts.
type BatchCounts struct {
	Total     int `json:"total"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

// Terminal reports whether the batch will change no more.
func (b BatchObject) Terminal() bool {
	switch b.Status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// errorText is the batch's own errors, for messages.
func (b BatchObject) errorText() string {
	if b.Errors == nil || len(b.Errors.Data) == 0 {
		return ""
	}
	var parts []string
	for _, e := range b.Errors.Data {
		s := e.Code + ": " + e.Message
		if e.Line != nil {
			s += fmt.Sprintf(" (line %d)", *e.Line)
		}
		parts = append(parts, s)
		if len(parts) == 3 {
			break
		}
	}
	return strings.Join(parts, "; ")
}

// UploadFile uploads the batch input file at path (purpose "batch"),
// streaming it, and returns the file's id.
func (a *BatchAPI) UploadFile(ctx context.Context, path string) (string, error) {
	return a.Upload(ctx, fsys.OS, path, filepath.Base(path))
}

// Upload uploads the batch input file at path on fsy under the file name
// name (purpose "batch"), streaming it, and returns the file's id.
func (a *BatchAPI) Upload(ctx context.Context, fsy fsys.FS, path, name string) (string, error) {
	var obj struct {
		ID string `json:"id"`
	}
	err := a.retry(ctx, "uploading "+filepath.Base(path), func(ctx context.Context) (*http.Response, error) {
		f, err := fsy.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			defer f.Close()
			err := mw.WriteField("purpose", "batch")
			if err == nil {
				var part io.Writer
				if part, err = mw.CreateFormFile("file", name); err == nil {
					_, err = io.Copy(part, f)
				}
			}
			if err == nil {
				err = mw.Close()
			}
			pw.CloseWithError(err)
		}()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/files", pr)
		if err != nil {
			pr.Close()
			return nil, err
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return a.do(req)
	}, &obj)
	if err == nil && obj.ID == "" {
		err = errors.New("uploading a batch file: the reply has no file id")
	}
	return obj.ID, err
}

// CreateBatch creates a batch of the chat completions in the uploaded file.
// A create whose reply was lost (a proxy's 502 or 504, a reset, a cut
// body) may have made the batch all the same, so before each retry the
// endpoint's batches are looked through for one of this input file (see
// FindBatchOfFile); one found is the answer, and no second batch of the
// same file is made (and billed).
func (a *BatchAPI) CreateBatch(ctx context.Context, fileID, window string, metadata map[string]string) (BatchObject, error) {
	body, _ := json.Marshal(map[string]any{
		"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": window, "metadata": metadata,
	})
	var b BatchObject
	lookFirst := func(ctx context.Context) (bool, error) {
		found, ok, err := a.FindBatchOfFile(ctx, fileID)
		if ok {
			b = found
		}
		return ok, err
	}
	err := a.retryLooking(ctx, "creating a batch", func(ctx context.Context) (*http.Response, error) {
		return a.send(ctx, http.MethodPost, "/batches", body)
	}, &b, lookFirst)
	if err == nil && b.ID == "" {
		err = errors.New("creating a batch: the reply has no batch id")
	}
	return b, err
}

// findPages is how many pages of 100 batches, newest first, a look for a
// batch of an input file reads: a batch made moments (or one kill) ago is
// on the first.
const findPages = 10

// FindBatchOfFile looks for the batch made of the uploaded input file
// fileID. A file id is the upload's own, so a batch that reads it was made
// by whoever uploaded it.
func (a *BatchAPI) FindBatchOfFile(ctx context.Context, fileID string) (BatchObject, bool, error) {
	return a.FindBatch(ctx, findPages, func(o BatchObject) bool { return o.InputFileID == fileID })
}

// GetBatch reads a batch.
func (a *BatchAPI) GetBatch(ctx context.Context, id string) (BatchObject, error) {
	var b BatchObject
	err := a.retry(ctx, "reading batch "+id, func(ctx context.Context) (*http.Response, error) {
		return a.send(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), nil)
	}, &b)
	return b, err
}

// CancelBatch asks the provider to cancel a batch; what it answered so far
// stays in its output file.
func (a *BatchAPI) CancelBatch(ctx context.Context, id string) (BatchObject, error) {
	var b BatchObject
	err := a.retry(ctx, "cancelling batch "+id, func(ctx context.Context) (*http.Response, error) {
		return a.send(ctx, http.MethodPost, "/batches/"+url.PathEscape(id)+"/cancel", nil)
	}, &b)
	return b, err
}

// FindBatch looks through the endpoint's batches, newest first, for one
// that match accepts; it reads at most maxPages pages of 100. A run uses
// it to find a batch it created but was killed before recording.
func (a *BatchAPI) FindBatch(ctx context.Context, maxPages int, match func(BatchObject) bool) (BatchObject, bool, error) {
	after := ""
	for range maxPages {
		var page struct {
			Data    []BatchObject `json:"data"`
			HasMore bool          `json:"has_more"`
			LastID  string        `json:"last_id"`
		}
		q := "/batches?limit=100"
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		err := a.retry(ctx, "listing batches", func(ctx context.Context) (*http.Response, error) {
			return a.send(ctx, http.MethodGet, q, nil)
		}, &page)
		if err != nil {
			return BatchObject{}, false, err
		}
		for _, b := range page.Data {
			if match(b) {
				return b, true, nil
			}
		}
		if !page.HasMore || len(page.Data) == 0 {
			break
		}
		after = page.LastID
		if after == "" {
			after = page.Data[len(page.Data)-1].ID
		}
	}
	return BatchObject{}, false, nil
}

// Download writes the content of file id to path, durably, replacing it.
func (a *BatchAPI) Download(ctx context.Context, id, path string) error {
	return a.DownloadFS(ctx, fsys.OS, id, path)
}

// DownloadFS is Download to a path on fsy.
func (a *BatchAPI) DownloadFS(ctx context.Context, fsy fsys.FS, id, path string) error {
	return a.retry(ctx, "downloading file "+id, func(ctx context.Context) (*http.Response, error) {
		resp, err := a.send(ctx, http.MethodGet, "/files/"+url.PathEscape(id)+"/content", nil)
		if err != nil || resp.StatusCode/100 != 2 {
			return resp, err
		}
		defer resp.Body.Close()
		if err := writeStream(fsy, path, resp.Body); err != nil {
			return nil, &transientError{err}
		}
		resp.Body = io.NopCloser(strings.NewReader("{}"))
		return resp, nil
	}, nil)
}

// writeStream copies r into path through a temporary file of its own,
// synced, then renamed over path between two syncs of the directory.
func writeStream(fsy fsys.FS, path string, r io.Reader) error {
	tmp := fsys.TempPath(path)
	f, err := fsy.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if err == nil {
		err = fsys.SyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.RenameSynced(fsy, tmp, path)
	}
	if err != nil {
		fsy.Remove(tmp)
	}
	return err
}

// transientError marks a failure in the middle of a transfer, retried.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

func (a *BatchAPI) send(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return a.do(req)
}

func (a *BatchAPI) do(req *http.Request) (*http.Response, error) {
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	return a.httpc.Do(req)
}

// batchCallTimeout bounds one call of the batch API (an upload of 200 MB
// included).
const batchCallTimeout = 30 * time.Minute

// retry makes the call until it succeeds or fails for good, decoding a 2xx
// JSON body into out (when not nil). Errors name what was being done.
func (a *BatchAPI) retry(ctx context.Context, what string, call func(context.Context) (*http.Response, error), out any) error {
	return a.retryLooking(ctx, what, call, out, nil)
}

// retryLooking is retry for a call that may have done its work although
// its reply was lost: before each retry, found (when not nil) looks for
// what the call would have made, and a true ends the retries without
// error (found filled out itself). A failed look is retried as the call.
func (a *BatchAPI) retryLooking(ctx context.Context, what string, call func(context.Context) (*http.Response, error), out any,
	found func(context.Context) (bool, error)) error {
	for attempt := 1; ; attempt++ {
		var resp *http.Response
		var status int
		var retryable bool
		var err error
		if attempt > 1 && found != nil {
			// Not called again until the look says the first call made
			// nothing: a look that fails is this attempt's failure.
			var ok bool
			if ok, err = found(ctx); err == nil && ok {
				return nil
			}
			if err != nil && ClassOf(err) != ClassRetryable {
				return err
			}
			retryable = err != nil
		}
		if err == nil {
			actx, cancel := context.WithTimeout(ctx, batchCallTimeout)
			resp, err = call(actx)
			status, retryable, err = a.settle(resp, err, out)
			cancel()
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return &Error{Class: ClassCanceled, Reason: "canceled", Err: context.Cause(ctx)}
		}
		class := ClassRetryable
		if !retryable {
			class, _ = classifyStatus(status)
		}
		if class != ClassRetryable || attempt >= a.opt.MaxAttempts {
			return &Error{Class: class, Status: status, Attempts: attempt, Stage: "batch", Reason: "batch_api",
				Err: a.red.sanitize(fmt.Errorf("%s at %s: %w", what, redactURL(a.base), err))}
		}
		var h http.Header
		if resp != nil {
			h = resp.Header
		}
		wait := backoff(attempt, a.opt.BackoffBase, a.opt.BackoffMax)
		if ra, ok := retryAfter(h, time.Now()); ok {
			wait = min(ra, a.opt.BackoffMax)
		}
		if err := sleep(ctx, wait); err != nil {
			return &Error{Class: ClassCanceled, Reason: "canceled", Err: err}
		}
	}
}

// settle reads a response: a 2xx decodes into out; anything else is an
// error with the status and the server's message, retryable when a
// connection failed or the transfer broke.
func (a *BatchAPI) settle(resp *http.Response, err error, out any) (status int, retryable bool, _ error) {
	if err != nil {
		var te *transientError
		if errors.As(err, &te) {
			return 0, true, err
		}
		class, _ := classify(err, 0)
		return 0, class == ClassRetryable, err
	}
	defer resp.Body.Close()
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if rerr != nil {
		return resp.StatusCode, true, rerr
	}
	if resp.StatusCode/100 != 2 {
		msg := a.red.excerpt(body)
		var env struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &env) == nil && env.Error.Message != "" {
			msg = a.red.redact(env.Error.Message)
		}
		return resp.StatusCode, false, fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return resp.StatusCode, false, fmt.Errorf("the reply is not the expected JSON: %v", err)
		}
	}
	return resp.StatusCode, false, nil
}
