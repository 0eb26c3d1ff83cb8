package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkerIsTheServersOwnProgram: a background worker started after the server's program
// file was replaced (as an upgrade replaces it) is the server's own program, not the new
// file: the server and its worker speak one version of the orders and the records.
func TestWorkerIsTheServersOwnProgram(t *testing.T) {
	t.Parallel()
	srv, release := heldAnswer(t, "the full answer")
	resultsDir := t.TempDir()
	stopWorkers(t, resultsDir)
	// Copied by another process: a file this one wrote could still be open in a child
	// forked meanwhile by a parallel test, and starting it would fail ("text file busy").
	bin := filepath.Join(t.TempDir(), "consult")
	if out, err := exec.Command("cp", binary, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	s := startRawFrom(t, bin, "openrouter", "test-key", "--base-url", srv.BaseURL(), "--results-dir", resultsDir, "--heartbeat", "200ms")
	s.call(t, 1, "consultation", map[string]any{"path": fixture(t), "pattern": "**/*.go", "query": "q", "dry_run": true}) // started

	// The upgrade: another program renamed over the server's file.
	other := bin + ".new"
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho 'not the server' >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, bin); err != nil {
		t.Fatal(err)
	}
	id := startBackground(t, s, 2, fixture(t), "a slow question")
	release()
	text, sc := s.call(t, 3, "consultation_result", map[string]any{"id": id, "wait": 10})
	if sc["kind"] != "answer" || !strings.HasPrefix(text, "the full answer") {
		t.Fatalf("a worker started after the upgrade: %v\n%s\nserver:\n%s", sc, text, s.stderr.String())
	}
}
