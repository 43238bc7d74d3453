package sim

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// This file holds the simulated Files API (POST /v1/files, GET and DELETE
// /v1/files/{id}, GET /v1/files/{id}/content) and the state it shares with
// the Batch API of batch.go. Files live on disk, never in memory.

// maxOpenBatches bounds the batches that are not yet in a final state;
// beyond it POST /v1/batches answers 429.
const maxOpenBatches = 256

// formOverhead is what a multipart upload may carry beyond the file itself
// (boundaries, part headers, the purpose field).
const formOverhead = 1 << 20

// batchAPI is the state of the simulated Files and Batch API: file objects
// whose bytes are in dir, and batches, all in memory.
type batchAPI struct {
	maxBytes int64
	parent   string // Config.BatchDir

	mu       sync.Mutex
	dir      string // made on first use, removed by close
	closed   bool
	files    map[string]*storedFile
	batches  map[string]*batch
	order    []*batch // by creation
	open     int      // batches not in a final state
	uploaded int64
	refused  int64
	rows     rowCounts

	customIDs answerCounts // 200 rows per hashed custom_id
	// fileOrder is the files' ids in upload order, for the list.
	fileOrder []string
	// The replies lost and the creates answered 504 so far (Config's
	// BatchLoseCreates, BatchLoseUploads, BatchCreateLate).
	lostCreates, lostUploads, lateCreates int
	running                               sync.WaitGroup
	slots                                 chan struct{} // batches answering rows at once
}

// rowCounts counts batch rows by how they ended.
type rowCounts struct{ answered, failed, expired, cancelled int64 }

type storedFile struct {
	obj  fileObject
	path string
}

// fileObject is OpenAI's File object.
type fileObject struct {
	ID            string  `json:"id"`
	Object        string  `json:"object"`
	Bytes         int64   `json:"bytes"`
	CreatedAt     int64   `json:"created_at"`
	ExpiresAt     *int64  `json:"expires_at"`
	Filename      string  `json:"filename"`
	Purpose       string  `json:"purpose"`
	Status        string  `json:"status"`
	StatusDetails *string `json:"status_details"`
}

func newBatchAPI(cfg Config) *batchAPI {
	return &batchAPI{maxBytes: cfg.BatchMaxBytes, parent: cfg.BatchDir, files: map[string]*storedFile{},
		batches: map[string]*batch{}, slots: make(chan struct{}, 2)}
}

// ensureDir makes the server's file directory on first use.
func (a *batchAPI) ensureDir() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return "", errors.New("the simulated endpoint (llmtest) is shutting down")
	}
	if a.dir == "" {
		dir, err := os.MkdirTemp(a.parent, "llmtest-batch-")
		if err != nil {
			return "", fmt.Errorf("making the simulated Files API's directory: %w", err)
		}
		a.dir = dir
	}
	return a.dir, nil
}

// close stops taking files and batches, waits for running batches (they
// stop at their next row once the server's closed channel is closed) and
// removes the directory.
func (a *batchAPI) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.running.Wait()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dir != "" {
		_ = os.RemoveAll(a.dir)
	}
}

// newID returns prefix and 26 random characters, as unique as OpenAI's
// ids: ids never repeat across servers, so a client that outlives a server
// cannot mistake a new batch for the one it recorded.
func newID(prefix string) string { return prefix + strings.ToLower(rand.Text()) }

func unixNow() int64 { return time.Now().Unix() }

func ptr[T any](v T) *T { return &v }

// writeAPIError answers with OpenAI's error envelope, naming the parameter
// at fault when there is one.
func writeAPIError(w http.ResponseWriter, status int, param, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	body := errorBody{Message: msg, Type: typ}
	if param != "" {
		body.Param = &param
	}
	writeJSON(w, status, errorEnvelope{body})
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeAPIError(w, http.StatusMethodNotAllowed, "", "use "+allow+" here")
}

// serveBatchAPI answers the Files and Batch API's paths; it returns false
// for any other path.
func (s *Server) serveBatchAPI(w http.ResponseWriter, r *http.Request) bool {
	route := func(prefix string) (id, sub string, ok bool) {
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok || rest == "" {
			return "", "", false
		}
		id, sub, _ = strings.Cut(rest, "/")
		return id, sub, id != ""
	}
	switch {
	case r.URL.Path == "/v1/files":
		switch r.Method {
		case http.MethodPost:
			s.uploadFile(w, r)
		case http.MethodGet:
			s.listFiles(w, r)
		default:
			methodNotAllowed(w, "GET, POST")
		}
	case r.URL.Path == "/v1/batches":
		switch r.Method {
		case http.MethodPost:
			s.createBatch(w, r)
		case http.MethodGet:
			s.listBatches(w, r)
		default:
			methodNotAllowed(w, "GET, POST")
		}
	default:
		if id, sub, ok := route("/v1/files/"); ok {
			s.fileRoute(w, r, id, sub)
			return true
		}
		if id, sub, ok := route("/v1/batches/"); ok {
			s.batchRoute(w, r, id, sub)
			return true
		}
		return false
	}
	return true
}

func (s *Server) fileRoute(w http.ResponseWriter, r *http.Request, id, sub string) {
	switch {
	case sub == "" && r.Method == http.MethodGet:
		if f := s.batch.file(w, id); f != nil {
			writeJSON(w, http.StatusOK, f.obj)
		}
	case sub == "" && r.Method == http.MethodDelete:
		s.deleteFile(w, id)
	case sub == "":
		methodNotAllowed(w, "GET, DELETE")
	case sub == "content" && r.Method == http.MethodGet:
		s.fileContent(w, r, id)
	case sub == "content":
		methodNotAllowed(w, http.MethodGet)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	}
}

// file looks a file up, answering 404 itself when there is none.
func (a *batchAPI) file(w http.ResponseWriter, id string) *storedFile {
	a.mu.Lock()
	f := a.files[id]
	a.mu.Unlock()
	if f == nil {
		writeAPIError(w, http.StatusNotFound, "file_id", fmt.Sprintf("no file with id %q on the simulated endpoint (llmtest)", id))
	}
	return f
}

// uploadFile takes a multipart upload (fields purpose and file), streaming
// the file to disk. Anything short of a whole form with purpose "batch" and
// a file within BatchMaxBytes gets a 400 and leaves no file behind.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	obj, status, param, err := s.batch.receive(w, r)
	if err != nil {
		s.batch.mu.Lock()
		s.batch.refused++
		s.batch.mu.Unlock()
		s.cfg.Logger.Debug("llmtest: upload refused", "err", err)
		writeAPIError(w, status, param, err.Error())
		return
	}
	if s.batch.take(&s.batch.lostUploads, s.cfg.BatchLoseUploads) {
		loseReply()
	}
	writeJSON(w, http.StatusOK, obj)
}

// receive reads an upload into a new file; on failure it returns the
// status and parameter to report.
func (a *batchAPI) receive(w http.ResponseWriter, r *http.Request) (fileObject, int, string, error) {
	r.Body = http.MaxBytesReader(w, r.Body, a.maxBytes+formOverhead)
	mr, err := r.MultipartReader()
	if err != nil {
		return fileObject{}, http.StatusBadRequest, "", fmt.Errorf("want a multipart/form-data body with the fields purpose and file: %w", err)
	}
	dir, err := a.ensureDir()
	if err != nil {
		return fileObject{}, http.StatusServiceUnavailable, "", err
	}
	var purpose, filename string
	var tmp *os.File
	var size int64
	defer func() {
		if tmp != nil { // not kept
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fileObject{}, http.StatusBadRequest, "", fmt.Errorf("reading the upload (cut short?): %w", err)
		}
		switch part.FormName() {
		case "purpose":
			b, err := io.ReadAll(io.LimitReader(part, 65))
			if err != nil {
				return fileObject{}, http.StatusBadRequest, "purpose", fmt.Errorf("reading the purpose field: %w", err)
			}
			purpose = string(b)
		case "file":
			if tmp != nil {
				return fileObject{}, http.StatusBadRequest, "file", errors.New("the upload has more than one file field")
			}
			if tmp, err = os.CreateTemp(dir, "upload-*"); err != nil {
				return fileObject{}, http.StatusInternalServerError, "", fmt.Errorf("storing the upload: %w", err)
			}
			filename = excerpt(part.FileName(), 255)
			n, err := io.Copy(tmp, io.LimitReader(part, a.maxBytes+1))
			switch {
			case n > a.maxBytes:
				return fileObject{}, http.StatusBadRequest, "file", fmt.Errorf("the file is larger than the %d-byte limit of the simulated endpoint (llmtest; OpenAI documents 200 MB)", a.maxBytes)
			case err != nil:
				return fileObject{}, http.StatusBadRequest, "file", fmt.Errorf("the upload was cut short after %d bytes of the file: %w", n, err)
			}
			size = n
		default:
			if _, err := io.Copy(io.Discard, part); err != nil {
				return fileObject{}, http.StatusBadRequest, "", fmt.Errorf("reading the upload (cut short?): %w", err)
			}
		}
	}
	switch {
	case tmp == nil:
		return fileObject{}, http.StatusBadRequest, "file", errors.New("the upload has no file field")
	case purpose != "batch":
		return fileObject{}, http.StatusBadRequest, "purpose", fmt.Errorf("purpose %q: the simulated endpoint (llmtest) takes only purpose \"batch\"", excerpt(purpose, 64))
	}
	if err := tmp.Close(); err != nil {
		return fileObject{}, http.StatusInternalServerError, "", fmt.Errorf("storing the upload: %w", err)
	}
	obj := fileObject{ID: newID("file-"), Object: "file", Bytes: size, CreatedAt: unixNow(), Filename: filename,
		Purpose: purpose, Status: "processed"}
	if err := a.add(obj, tmp.Name()); err != nil {
		return fileObject{}, http.StatusServiceUnavailable, "", err
	}
	a.mu.Lock()
	a.uploaded++
	a.mu.Unlock()
	tmp = nil
	return obj, 0, "", nil
}

// add renames a finished file to its id and makes it visible.
func (a *batchAPI) add(obj fileObject, tmpPath string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		_ = os.Remove(tmpPath) // not kept: the endpoint's directory goes with it
		return errors.New("the simulated endpoint (llmtest) is shutting down")
	}
	path := filepath.Join(a.dir, obj.ID)
	if err := os.Rename(tmpPath, path); err != nil {
		_ = os.Remove(tmpPath) // not kept; err is the failure
		return fmt.Errorf("storing %s: %w", obj.ID, err)
	}
	a.files[obj.ID] = &storedFile{obj: obj, path: path}
	a.fileOrder = append(a.fileOrder, obj.ID)
	return nil
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request, id string) {
	f := s.batch.file(w, id)
	if f == nil {
		return
	}
	fh, err := os.Open(f.path)
	if err != nil { // deleted meanwhile
		writeAPIError(w, http.StatusNotFound, "file_id", fmt.Sprintf("no file with id %q on the simulated endpoint (llmtest)", id))
		return
	}
	defer func() { _ = fh.Close() }() // only read: closing loses nothing
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", time.Unix(f.obj.CreatedAt, 0), fh)
}

func (s *Server) deleteFile(w http.ResponseWriter, id string) {
	a := s.batch
	a.mu.Lock()
	f := a.files[id]
	delete(a.files, id)
	a.mu.Unlock()
	if f == nil {
		writeAPIError(w, http.StatusNotFound, "file_id", fmt.Sprintf("no file with id %q on the simulated endpoint (llmtest)", id))
		return
	}
	_ = os.Remove(f.path) // a batch reading it keeps its open handle
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
}
