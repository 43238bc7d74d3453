package llm

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// countingConn counts the writes a connection gets.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestNewTransportWritesARequestAtOnce: a request the size of a grounded
// prompt goes to the connection in one write (one system call), headers and
// body together; a request larger than the buffer still arrives whole.
func TestNewTransportWritesARequestAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = w.Write([]byte{byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))})
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name      string
		size      int
		maxWrites int64
	}{
		{"grounded prompt, 6 KB", 6 << 10, 1},
		{"just under the buffer", requestWriteBuffer - 1024, 1},
		{"a long rollout, 100 KB", 100 << 10, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var writes atomic.Int64
			tr := NewTransport(4)
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{c, &writes}, nil
			}
			defer tr.CloseIdleConnections()
			body := bytes.Repeat([]byte("x"), tc.size)
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if n := int(got[0])<<16 | int(got[1])<<8 | int(got[2]); n != tc.size {
				t.Errorf("the server read %d bytes of body, want %d", n, tc.size)
			}
			if w := writes.Load(); w < 1 || w > tc.maxWrites {
				t.Errorf("%d writes to the connection, want 1..%d", w, tc.maxWrites)
			}
		})
	}
}
