package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rubricforge/rubricforge/internal/testkit/testbin"
)

// TestBinary builds simllm, starts it, and checks that the first stdout line
// is a base URL that answers /v1/models, and that SIGINT stops it cleanly.
func TestBinary(t *testing.T) {
	bin := testbin.Command(t, "examples/simllm")
	problems := filepath.Join(t.TempDir(), "p.jsonl")
	if err := os.WriteFile(problems, []byte(`{"problem":"What is 2+2?","answer":"4"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-problems", problems, "-latency", "1ms", "-seed", "3")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first stdout line: %v", err)
	}
	base := strings.TrimSpace(line)
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("first line %q is not a loopback base URL", base)
	}
	resp, err := http.Get(base + "/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "simulated" {
		t.Fatalf("models %+v, %v", models, err)
	}
	// A base URL without /v1 gets vLLM's 404.
	resp, err = http.Get(strings.TrimSuffix(base, "/v1") + "/models")
	if err != nil {
		t.Fatal(err)
	}
	notFound, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || string(notFound) != `{"detail":"Not Found"}` {
		t.Errorf("GET /models without /v1: %d %s, want vLLM's 404", resp.StatusCode, notFound)
	}
	resp, err = http.Post(base+"/chat/completions", "application/json", strings.NewReader(
		`{"model":"x","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unrecognized prompt: status %d, want 400", resp.StatusCode)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"SIMULATED OpenAI-compatible endpoint (rubricforge llmtest): not a real model", "(1 answers)", "seed 3", "stopped after 1 requests (by status: 400 1)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"help", []string{"-h"}, 0, "Examples:"},
		{"remote address", []string{"-addr", "0.0.0.0:0"}, 2, "-allow-remote"},
		{"empty host", []string{"-addr", ":8000"}, 2, "not a loopback"},
		{"bad rate", []string{"-rate-429", "1.5"}, 2, "between 0 and 1"},
		{"rates over 1", []string{"-rate-429", "0.6", "-rate-500", "0.6"}, 2, "add up to"},
		{"bad flag value", []string{"-rate-hang", "x"}, 2, "invalid value"},
		{"stray argument", []string{"extra"}, 2, "unexpected arguments"},
		{"missing problems", []string{"-problems", "/nonexistent/p.jsonl"}, 2, "no such file"},
		{"negative limit", []string{"-limit-rpm", "-5"}, 2, "-limit-rpm"},
		{"batch row-fail rate", []string{"-batch-row-fail", "2"}, 2, "-batch-row-fail"},
		{"batch turnaround", []string{"-batch-turnaround", "-1s"}, 2, "-batch-turnaround"},
		{"batch expire", []string{"-batch-expire", "-1"}, 2, "-batch-expire"},
		{"batch max requests", []string{"-batch-max-requests", "0"}, 2, "-batch-max-requests"},
		{"batch max bytes", []string{"-batch-max-bytes", "0"}, 2, "-batch-max-bytes"},
		{"batch dir", []string{"-batch-dir", "/nonexistent/dir"}, 2, "-batch-dir"},
		{"help explains batches", []string{"-h"}, 0, "-batch-turnaround 30s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// TestMeasuredFlags: the flags used to measure the pipeline from outside
// exist under these names and reach the simulated endpoint's Config.
func TestMeasuredFlags(t *testing.T) {
	problems := filepath.Join(t.TempDir(), "p.jsonl")
	if err := os.WriteFile(problems, []byte(`{"problem":"What is 2+2?","answer":"4"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	o, _, err := parseFlags([]string{"-fault-rate", "0.2", "-hang-max", "5s", "-latency", "100ms", "-problems", problems,
		"-limit-rpm", "600", "-limit-tpm", "150000"}, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Faults.Total() < 0.199 || cfg.Faults.HangMax != 5*time.Second || cfg.Latency != 100*time.Millisecond ||
		len(cfg.Answers) != 1 || cfg.LimitRPM != 600 || cfg.LimitTPM != 150000 {
		t.Errorf("config %+v", cfg)
	}
}

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:0", false, true},
		{"[::1]:8000", false, true},
		{"localhost:8000", false, true},
		{"127.0.0.2:80", false, true},
		{"0.0.0.0:8000", false, false},
		{":8000", false, false},
		{"example.com:80", false, false},
		{"0.0.0.0:8000", true, true},
		{"nonsense", false, false},
	}
	for _, tt := range tests {
		if err := checkLoopback(tt.addr, tt.remote); (err == nil) != tt.ok {
			t.Errorf("checkLoopback(%q, %v) = %v, want ok %v", tt.addr, tt.remote, err, tt.ok)
		}
	}
}

func TestServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"-fault-rate", "0.1", "-correct-rate", "0"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(stderr.String(), "429 0.02") {
		t.Errorf("settings do not show the spread fault rate:\n%s", stderr.String())
	}
}

// TestBatchFlags: the -batch-* flags reach the Config, the startup lines
// label the Batch API simulated, a batch runs through the Batch API, and
// the shutdown line counts it; -batch-dir is left empty.
func TestBatchFlags(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-batch-turnaround", "50ms", "-batch-row-fail", "0.25", "-batch-expire", "1", "-batch-max-requests", "7",
		"-batch-max-bytes", "100000", "-batch-dir", dir}
	var stderr bytes.Buffer
	o, _, err := parseFlags(args, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	cfg, err := o.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BatchTurnaround != 50*time.Millisecond || cfg.BatchRowFailRate != 0.25 || cfg.BatchExpire != 1 ||
		cfg.BatchMaxRequests != 7 || cfg.BatchMaxBytes != 100000 || cfg.BatchDir != dir {
		t.Errorf("config %+v", cfg)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	stderr.Reset()
	go func() {
		done <- run(ctx, append(args, "-batch-row-fail", "0"), pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := strings.TrimSpace(line)
	// Eight lines: over -batch-max-requests 7, so the batch fails naming line 8.
	var file bytes.Buffer
	for i := range 8 {
		fmt.Fprintf(&file, `{"custom_id":"r%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}`+"\n", i)
	}
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	_, _ = fw.Write(file.Bytes())
	_ = mw.Close()
	var obj struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Errors *struct {
			Data []struct {
				Code string `json:"code"`
				Line int    `json:"line"`
			} `json:"data"`
		} `json:"errors"`
	}
	post := func(url, contentType string, body io.Reader) {
		t.Helper()
		resp, err := http.Post(url, contentType, body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %v", url, resp.StatusCode, err)
		}
	}
	post(base+"/files", mw.FormDataContentType(), &form)
	post(base+"/batches", "application/json", strings.NewReader(`{"input_file_id":"`+obj.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	for deadline := time.Now().Add(time.Minute); obj.Status != "failed"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s", obj.Status)
		}
		resp, err := http.Get(base + "/batches/" + obj.ID)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&obj)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if obj.Errors == nil || len(obj.Errors.Data) != 1 || obj.Errors.Data[0].Code != "too_many_tasks" || obj.Errors.Data[0].Line != 8 {
		t.Errorf("batch %+v", obj)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"batches (SIMULATED Files and Batch API): turnaround 50ms, row failures 0, the first 1 batches expire, at most 7 requests and 100000 bytes per file, files under " + dir,
		"simllm: batch API: 1 files uploaded (0 refused), 1 batches (failed 1)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("-batch-dir after shutdown holds %v, %v", entries, err)
	}
}
