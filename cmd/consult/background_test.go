//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rawServer is the binary driven line by line over stdio, so a test controls its stdin and
// its signals and sees when it exits.
type rawServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan map[string]any
	stderr *lockedBuffer
	exited chan struct{}
	err    error // the exit status, once exited is closed
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startRaw(t *testing.T, args ...string) *rawServer {
	t.Helper()
	return startRawFrom(t, binary, args...)
}

// startRawFrom is startRaw with the program at bin.
func startRawFrom(t *testing.T, bin string, args ...string) *rawServer {
	t.Helper()
	s := &rawServer{cmd: exec.Command(bin, args...), lines: make(chan map[string]any, 100), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	s.cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, noModelList(args)...)
	s.cmd.Stderr = s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, for signals sent to the group
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cmd.Process.Kill(); <-s.exited })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				s.lines <- m
			}
		}
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	s.await(t, 1)
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawServer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// await returns the response with this id, skipping notifications (30 s: a hang guard).
func (s *rawServer) await(t *testing.T, id int) map[string]any {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-s.lines:
			if n, ok := m["id"].(float64); ok && int(n) == id {
				return m
			}
		case <-timeout:
			t.Fatalf("no response %d within 30 s; stderr:\n%s", id, s.stderr.String())
		}
	}
}

// awaitProgress reads the server's messages up to a progress notification whose message
// holds want, and fails the test if none comes within 30 s (a hang guard).
func (s *rawServer) awaitProgress(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m := <-s.lines:
			params, _ := m["params"].(map[string]any)
			if msg, _ := params["message"].(string); m["method"] == "notifications/progress" && strings.Contains(msg, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no progress notification said %q", want)
		}
	}
}

// call makes a tool call and returns its result's text and structured content.
func (s *rawServer) call(t *testing.T, id int, tool string, args map[string]any) (string, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	s.send(t, string(b))
	m := s.await(t, id)
	res, _ := m["result"].(map[string]any)
	if res == nil {
		t.Fatalf("call %d: no result in %v", id, m)
	}
	var text strings.Builder
	content, _ := res["content"].([]any)
	for _, c := range content {
		if cm, _ := c.(map[string]any); cm["type"] == "text" {
			text.WriteString(cm["text"].(string))
		}
	}
	sc, _ := res["structuredContent"].(map[string]any)
	return text.String(), sc
}

// startBackground starts a consultation with on_timeout "continue" and a 1 s timeout the
// upstream outlasts, and returns its id.
func startBackground(t *testing.T, s *rawServer, id int, dir, query string) string {
	t.Helper()
	bid, _ := startRunning(t, s, id, dir, query)
	return bid
}

// startRunning is startBackground that also returns the running result's structured content.
func startRunning(t *testing.T, s *rawServer, id int, dir, query string) (string, map[string]any) {
	t.Helper()
	text, sc := s.call(t, id, "consultation", map[string]any{"path": dir, "pattern": "**/*.go", "query": query,
		"model": "google/gemini-2.5-pro", "timeout": 1, "on_timeout": "continue"})
	bid, _ := sc["id"].(string)
	if sc["kind"] != "running" || bid == "" {
		t.Fatalf("want a running result with an id, got %v\n%s", sc, text)
	}
	return bid, sc
}

// startHanging starts a background consultation whose model sends a first part and then
// nothing, and returns its id once the worker has that part: the running result says so,
// or, on a machine too busy for that within the call's second, consultation_result does
// (requests 1000 and up).
func startHanging(t *testing.T, s *rawServer, id int, dir string) string {
	t.Helper()
	bid, sc := startRunning(t, s, id, dir, "hang forever")
	for poll := 1000; ; poll++ {
		if streamed, _ := sc["streamed"].(map[string]any); streamed["answer"] != nil && streamed["answer"] != 0.0 {
			return bid
		}
		if poll == 1030 { // a hang guard
			t.Fatalf("the worker has no answer tokens after 30 s: %v", sc)
		}
		_, sc = s.call(t, poll, "consultation_result", map[string]any{"id": bid, "wait": 1})
	}
}

func TestParseServeBackgroundFlags(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	cfg, err := parseServe("openai", nil, env(map[string]string{"HOME": "/home/u"}), &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ResultsDir != "/home/u/.local/state/consult/results" || cfg.ResultsTTL != 24*time.Hour ||
		cfg.BackgroundLimit != 30*time.Minute || cfg.BackgroundWorkers != 8 {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = parseServe("openai", nil, env(map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/state", "CONSULT_RESULTS_TTL": "2h"}), &stderr)
	if err != nil || cfg.ResultsDir != "/state/consult/results" || cfg.ResultsTTL != 2*time.Hour {
		t.Errorf("XDG_STATE_HOME and environment: %+v %v", cfg, err)
	}
	cfg, err = parseServe("openai", []string{"--results-dir", "rel", "--background-limit", "90m"}, env(map[string]string{"CONSULT_RESULTS_DIR": "/env"}), &stderr)
	wd, _ := os.Getwd()
	if err != nil || cfg.ResultsDir != filepath.Join(wd, "rel") || cfg.BackgroundLimit != 90*time.Minute {
		t.Errorf("flags: %+v %v", cfg, err)
	}
	if cfg, err := parseServe("openai", []string{"--background-workers", "3"}, env(map[string]string{"CONSULT_BACKGROUND_WORKERS": "5"}), &stderr); err != nil || cfg.BackgroundWorkers != 3 {
		t.Errorf("--background-workers over the environment: %+v %v", cfg, err)
	}
	for _, bad := range [][]string{{"--background-workers", "0"}, {"--results-ttl", "0"}, {"--background-limit", "500ms"}, {"--results-ttl", "later"}} {
		if _, err := parseServe("openai", bad, env(nil), &stderr); err == nil {
			t.Errorf("parseServe(%q) accepted a bad value", bad)
		}
	}
	if cfg, _ := parseServe("openai", nil, env(nil), &stderr); cfg.ResultsDir != "" {
		t.Errorf("no HOME: results dir %q, want none (memory only)", cfg.ResultsDir)
	}
}
