package consultation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestAllowRoots(t *testing.T) {
	t.Parallel()
	allowed := sampleTree(t)
	outside := sampleTree(t)
	link := filepath.Join(allowed, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	roots, err := ResolveRoots([]string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	svc := &Service{Counter: counter, AllowRoots: roots, gather: countingGather(&calls)}
	for _, tc := range []struct {
		name string
		args Request
		ok   bool
		want string
	}{
		{"inside", goReq(Request{Path: allowed, DryRun: true}), true, ""},
		{"subdirectory", goReq(Request{Path: filepath.Join(allowed, "internal"), DryRun: true}), true, ""},
		{"outside", goReq(Request{Path: outside, DryRun: true}), false, "outside the directories this server may read"},
		{"symlink out", goReq(Request{Path: link, DryRun: true}), false, "outside the directories this server may read"},
		{"output outside", goReq(Request{Path: allowed, OutputFile: filepath.Join(outside, "a.md")}), false, "outside the directories this server may write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			res := svc.Consult(context.Background(), tc.args, nil)
			if res.IsError == tc.ok {
				t.Fatalf("isError = %v:\n%s", res.IsError, res.Text)
			}
			if !tc.ok {
				if !strings.Contains(res.Text, tc.want) {
					t.Errorf("message lacks %q: %s", tc.want, res.Text)
				}
				if calls.Load() != before {
					t.Error("a refused path was gathered")
				}
			}
		})
	}
	if _, err := ResolveRoots([]string{"relative"}); err == nil {
		t.Error("a relative --allow-root was accepted")
	}
	if _, err := ResolveRoots([]string{filepath.Join(allowed, "nope")}); err == nil {
		t.Error("a missing --allow-root was accepted")
	}
}

// TestAllowRootFileSystemRootRefused: "/" confines nothing, named directly or through a link.
func TestAllowRootFileSystemRootRefused(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "to-root")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"/", "/.", "/tmp/..", link} {
		_, err := ResolveRoots([]string{t.TempDir(), root})
		if err == nil || !strings.Contains(err.Error(), "confines nothing") {
			t.Errorf("ResolveRoots(%q) error = %v, want it refused as confining nothing", root, err)
		}
	}
}
