package sim

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// Transport returns an http.RoundTripper that hands each request straight to
// s, in this process, without a socket: for benchmarks that measure a client
// rather than the machine's loopback TCP and HTTP stacks. Latency and every
// fault behave as over HTTP: a hung request blocks until its context ends,
// and a truncated body ends in io.ErrUnexpectedEOF.
func (s *Server) Transport() http.RoundTripper { return inProcess{s} }

type inProcess struct{ s *Server }

func (t inProcess) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	w := &recorder{header: http.Header{}}
	defer func() {
		if req.Body != nil {
			req.Body.Close()
		}
		r := recover()
		if r == nil {
			return
		}
		if r != http.ErrAbortHandler {
			panic(r)
		}
		// The handler dropped the connection: a cut body, or no answer at all.
		if w.status == 0 {
			resp, err = nil, errors.New("llmtest: connection dropped before a response")
			if cerr := req.Context().Err(); cerr != nil {
				err = cerr
			}
			return
		}
		resp, err = w.response(req, io.MultiReader(bytes.NewReader(w.body.Bytes()), errorReader{io.ErrUnexpectedEOF})), nil
	}()
	t.s.ServeHTTP(w, req)
	if w.status == 0 {
		if err := req.Context().Err(); err != nil {
			return nil, err
		}
		w.status = http.StatusOK
	}
	return w.response(req, bytes.NewReader(w.body.Bytes())), nil
}

// recorder is the http.ResponseWriter of one in-process request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

func (w *recorder) Flush() {}

func (w *recorder) response(req *http.Request, body io.Reader) *http.Response {
	length := int64(-1)
	if cl, err := strconv.ParseInt(w.header.Get("Content-Length"), 10, 64); err == nil {
		length = cl
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(body),
		ContentLength: length,
		Request:       req,
	}
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }
