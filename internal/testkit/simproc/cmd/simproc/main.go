// Command simproc serves the simulated endpoint (internal/sim) for
// tests, in a process of its own, and reports its request log as it grows
// on standard output, for [simproc.Start]: a test that needs the log but
// is not about the endpoint then does not serve every request under its
// own race detector.
//
// Usage: simproc CONFIG.json. CONFIG.json is a sim.Config as JSON. The
// first line out is "url BASE_URL"; then "+" when a chat-completions
// request arrives and "e ENTRY" (a sim.Entry as JSON) when it is logged,
// in that order for each request. It serves on loopback until its
// standard input ends.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/rubricforge/rubricforge/internal/sim"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "simproc:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: simproc CONFIG.json")
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		return err
	}
	var cfg sim.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fmt.Errorf("%s: %w", os.Args[1], err)
	}
	cfg.KeepLog = true
	srv := sim.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	out := &reporter{srv: srv}
	hs := &http.Server{
		Handler:           out.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.DiscardHandler, slog.LevelDebug),
	}
	out.line("url http://" + ln.Addr().String() + "/v1")
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); srv.Close(); _ = ln.Close() }()
	if err := hs.Serve(ln); err != nil && !isClosed(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	_ = hs.Shutdown(ctx) // the input ended: the test is over
	return nil
}

func isClosed(err error) bool {
	return errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed)
}

// reporter writes the request log to standard output as it grows.
type reporter struct {
	srv  *sim.Server
	mu   sync.Mutex
	sent int // log entries written
}

func (o *reporter) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chat := r.URL.Path == "/v1/chat/completions" && r.Method == http.MethodPost
		if chat {
			o.line("+")
		}
		o.srv.ServeHTTP(w, r)
		if chat {
			o.flush()
		}
	})
}

// flush writes the log entries not yet written.
func (o *reporter) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.srv.LogFrom(o.sent) {
		b, err := json.Marshal(e)
		if err != nil {
			panic(err) // a sim.Entry always marshals
		}
		o.writeLocked("e " + string(b))
		o.sent++
	}
}

func (o *reporter) line(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writeLocked(s)
}

func (o *reporter) writeLocked(s string) {
	if _, err := os.Stdout.WriteString(s + "\n"); err != nil {
		os.Exit(1) // the test that reads this is gone
	}
}
