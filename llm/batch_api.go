package llm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
			defer func() { _ = f.Close() }() // only read: closing loses nothing
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
			_ = pr.Close() // stops the writing goroutine; err is the failure
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

// BatchMarkerKey is the metadata key of a batch's marker: a value the run
// writes into its journal before it sends the create, so that a create
// whose outcome is unknown can be recognized at the provider.
const BatchMarkerKey = "rubricforge_marker"

// NewBatchMarker returns a fresh marker, unique to one batch of one run.
func NewBatchMarker() string {
	var b [12]byte
	rand.Read(b[:])
	return "rf-" + hex.EncodeToString(b[:])
}

// DefaultCreateSettle is how long a create whose outcome is unknown is
// given to show in the provider's list before the batch is created anew.
// A gateway's 504 leaves the provider making the batch for as long as its
// own timeout, and a list may lag behind a batch just made; batches take
// hours, so minutes of care cost nothing.
const DefaultCreateSettle = 5 * time.Minute

// CreateBatch creates a batch of the chat completions in the uploaded file.
// metadata should carry a marker (BatchMarkerKey) the caller recorded
// before the call. A create whose outcome is unknown (a 5xx, a reset, a
// cut body: the provider may have made the batch) is never retried blind:
// the endpoint's batches are looked through for one of this input file or
// with this marker (FindBatchOf), at once and again after settle (0:
// DefaultCreateSettle), and one found is the answer; only a batch found
// neither time is created anew. A refusal (429, a 4xx) made nothing: it is
// retried as any call, then returned.
func (a *BatchAPI) CreateBatch(ctx context.Context, fileID, window string, metadata map[string]string, settle time.Duration) (BatchObject, error) {
	if settle <= 0 {
		settle = DefaultCreateSettle
	}
	body, _ := json.Marshal(map[string]any{
		"input_file_id": fileID, "endpoint": "/v1/chat/completions", "completion_window": window, "metadata": metadata,
	})
	marker := metadata[BatchMarkerKey]
	for attempt := 1; ; attempt++ {
		var b BatchObject
		actx, cancel := context.WithTimeout(ctx, batchCallTimeout)
		resp, err := a.send(actx, http.MethodPost, "/batches", body)
		status, retryable, err := a.settle(resp, err, &b)
		cancel()
		if err == nil && b.ID == "" {
			return b, errors.New("creating a batch: the reply has no batch id")
		}
		if err == nil {
			return b, nil
		}
		if ctx.Err() != nil {
			return b, &Error{Class: ClassCanceled, Reason: "canceled", Err: context.Cause(ctx)}
		}
		fail := func(class Class) error {
			return &Error{Class: class, Status: status, Attempts: attempt, Stage: "batch", Reason: "batch_api",
				Err: a.red.sanitize(fmt.Errorf("creating a batch at %s: %w", redactURL(a.base), err))}
		}
		if !createUnknown(status, err) {
			class := ClassRetryable
			if !retryable {
				class, _ = classifyStatus(status)
			}
			if class != ClassRetryable || attempt >= a.opt.MaxAttempts {
				return b, fail(class)
			}
			if err := sleep(ctx, backoff(attempt, a.opt.BackoffBase, a.opt.BackoffMax)); err != nil {
				return b, &Error{Class: ClassCanceled, Reason: "canceled", Err: err}
			}
			continue
		}
		a.opt.Logger.Warn("a batch create's outcome is unknown: the provider may have made it; looking for it before creating it anew",
			"reason", "create_unknown", "file", fileID, "marker", marker, "status", status, "err", a.red.sanitize(err).Error(), "settle", settle)
		for _, wait := range []time.Duration{0, settle} {
			if err := sleep(ctx, wait); err != nil {
				return b, &Error{Class: ClassCanceled, Reason: "canceled", Err: err}
			}
			found, ok, ferr := a.FindBatchOf(ctx, fileID, marker)
			if ferr != nil {
				return b, ferr // cannot look: not created blind (the caller retries, looking first)
			}
			if ok {
				a.opt.Logger.Info("found the batch of a create whose outcome was unknown", "id", found.ID, "file", fileID, "after", wait)
				return found, nil
			}
		}
		if attempt >= a.opt.MaxAttempts {
			return b, fail(ClassRetryable)
		}
		a.opt.Logger.Warn("no batch of the file after the settle time; creating it anew", "file", fileID, "settle", settle)
	}
}

// createUnknown reports whether a create that failed so may have made the
// batch: a 2xx whose body was cut, a 5xx (a gateway's 502 or 504, a
// provider that failed after making it), or a transport error once the
// request may have gone out (a reset, a timeout); not a refusal (429, a
// 4xx) or a connection that was never made.
func createUnknown(status int, err error) bool {
	if status >= 500 || status/100 == 2 { // a 2xx whose body did not arrive whole made the batch
		return true
	}
	if status != 0 {
		return false
	}
	var dns *net.DNSError
	return !errors.Is(err, syscall.ECONNREFUSED) && !errors.As(err, &dns)
}

// FindBatchOf looks for the batch made of the uploaded input file fileID,
// or carrying marker (BatchMarkerKey; "" matches none), through the whole
// list of the endpoint's batches back to the file's upload (no batch of
// the file is older). A file id is the upload's own, and a marker the
// run's, so a batch found is the caller's. A look that cannot read the
// file pages through the whole list.
func (a *BatchAPI) FindBatchOf(ctx context.Context, fileID, marker string) (BatchObject, bool, error) {
	var since int64
	if f, err := a.GetFile(ctx, fileID); err == nil {
		since = f.CreatedAt
	}
	return a.FindBatch(ctx, since, func(o BatchObject) bool {
		return o.InputFileID == fileID || (marker != "" && o.Metadata[BatchMarkerKey] == marker)
	})
}

// FileObject is OpenAI's file object, as far as this package reads it.
type FileObject struct {
	ID        string `json:"id"`
	Bytes     int64  `json:"bytes"`
	CreatedAt int64  `json:"created_at"`
	Filename  string `json:"filename"`
	Purpose   string `json:"purpose"`
}

// GetFile reads a file object.
func (a *BatchAPI) GetFile(ctx context.Context, id string) (FileObject, error) {
	var f FileObject
	err := a.retry(ctx, "reading file "+id, func(ctx context.Context) (*http.Response, error) {
		return a.send(ctx, http.MethodGet, "/files/"+url.PathEscape(id), nil)
	}, &f)
	return f, err
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
// that match accepts, page after page until one is found, the list ends,
// or a page reaches batches created before since (Unix seconds; 0 reads
// the whole list). A run uses it to find a batch it created but did not
// record (a kill, a lost reply), however many batches others made since.
func (a *BatchAPI) FindBatch(ctx context.Context, since int64, match func(BatchObject) bool) (BatchObject, bool, error) {
	after := ""
	for {
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
		if !page.HasMore || len(page.Data) == 0 || page.Data[len(page.Data)-1].CreatedAt < since {
			return BatchObject{}, false, nil
		}
		after = page.LastID
		if after == "" {
			after = page.Data[len(page.Data)-1].ID
		}
	}
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
		_ = fsy.Remove(tmp)
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
