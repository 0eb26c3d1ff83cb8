package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoMethodCallsByName: the binary has no way to call a method by name
// (reflect.Value.Method, MethodByName: text/template and html/template use them). A binary
// that has one keeps every exported method of every type it keeps, since any might be
// called so: gRPC's golang.org/x/net/trace brought it in with Google's Gemini SDK, and the
// binary was 86.9 MB instead of 45.6 ("What the binary is made of" in docs/performance.md).
func TestNoMethodCallsByName(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "tool", "nm", binary).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 3 && (f[2] == "reflect.Value.Method" || f[2] == "reflect.Value.MethodByName") {
			t.Errorf("the binary holds %s: something calls methods by name (find it with go build -ldflags=-dumpdep ./cmd/consult 2>&1 | grep ReflectMethod)", f[2])
		}
	}
}
