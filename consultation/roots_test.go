package consultation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/consultmcp/consult/files"
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
				t.Fatalf("isError = %v:\n%s", res.IsError, res.Text())
			}
			if !tc.ok {
				if !strings.Contains(res.Text(), tc.want) {
					t.Errorf("message lacks %q: %s", tc.want, res.Text())
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

// TestSwappedPathGathersNothingOutside: path is checked, then, before the gathering, its
// directory is moved away and a link to a directory outside the allowed root put in its
// place. The gathering reads the directory that was checked, through the handle opened at
// the check, and nothing outside: with allowed roots and without.
func TestSwappedPathGathersNothingOutside(t *testing.T) {
	t.Parallel()
	for _, confined := range []bool{true, false} {
		t.Run(fmt.Sprintf("roots %v", confined), func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			allowed := filepath.Join(base, "allowed")
			proj := filepath.Join(allowed, "proj")
			outside := filepath.Join(base, "outside")
			for dir, name := range map[string]string{proj: "inside.go", outside: "secret.go"} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte("package x\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			svc := &Service{Counter: counter}
			if confined {
				roots, err := ResolveRoots([]string{allowed})
				if err != nil {
					t.Fatal(err)
				}
				svc.AllowRoots = roots
			}
			svc.gather = func(ctx context.Context, o files.Options) (*files.Gathered, error) {
				if err := os.Rename(proj, filepath.Join(allowed, "moved")); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(outside, proj); err != nil {
					t.Fatal(err)
				}
				return files.Gather(ctx, o)
			}
			res := svc.Consult(context.Background(), Request{Path: proj, Pattern: "**/*.go", Query: "q", DryRun: true}, nil)
			if res.IsError {
				t.Fatalf("dry run: %s", res.Text())
			}
			if strings.Contains(res.Text(), "secret.go") || !strings.Contains(res.Text(), "1 file") {
				t.Errorf("gathered after the swap:\n%s", res.Text())
			}
		})
	}
}
