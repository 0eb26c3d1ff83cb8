package consultation

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/internal/leaf/models"
)

// fuzzDirToken in a fuzzed path or output_file stands for a real fixture directory, so that
// seeds can name existing directories on any machine.
const fuzzDirToken = "$DIR"

// FuzzValidate builds requests from fuzzed values and checks that validate never panics,
// that every refusal is an *ArgError naming a real argument, and that an accepted request
// keeps the invariants the rest of the call relies on. (Decoding the tool's argument map —
// wrong JSON types, nulls, unknown names — is mcpserver's, fuzzed there.) Seeds are in
// testdata/fuzz/FuzzValidate; run with
//
//	go test ./consultation -run '^$' -fuzz '^FuzzValidate$' -fuzztime 30s
//
// kinds: bits 0-2 pick whether timeout is given (0, 5, 7: given; otherwise the default);
// bits 5-6 whether path is (0: given; otherwise empty). The seeds' other bits and extra
// chose JSON types and unknown names when this package decoded the map; they are ignored.
func FuzzValidate(f *testing.F) {
	dir := f.TempDir()
	for _, d := range []string{"proj/sub", "with space", "ünï"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "proj", "main.go"), []byte("package main\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	const def = 22 * time.Second
	known := []string{ArgPath, ArgPattern, ArgQuery, ArgModel, ArgExclude, ArgTimeout, ArgOutputFile, ArgDryRun, ArgOnTimeout}

	f.Fuzz(func(t *testing.T, path, pattern, query, model, exclude, output string, timeout float64, dryRun bool, kinds uint8, extra string) {
		in := Request{Pattern: pattern, Query: query, Model: model, Exclude: exclude, DryRun: dryRun, OnTimeout: OnTimeout(extra)}
		if kinds>>5&3 == 0 {
			in.Path = strings.ReplaceAll(path, fuzzDirToken, dir)
		}
		in.OutputFile = strings.ReplaceAll(output, fuzzDirToken, dir)
		given := false
		switch kinds & 7 {
		case 0, 5, 7:
			// A duration holds ±292 years; beyond that, and for NaN, the MCP face refuses the
			// number before it becomes one.
			if math.Abs(timeout) < 1e9 {
				in.Timeout = time.Duration(timeout * float64(time.Second))
				given = in.Timeout != 0
			}
		}

		req, err := in.validate(def)
		if err != nil {
			var ae *consult.ArgError
			if !errors.Is(err, consult.ErrInvalidArgument) || !errors.As(err, &ae) {
				t.Fatalf("refusal is not an *ArgError wrapping ErrInvalidArgument: %T %v", err, err)
			}
			if strings.TrimSpace(ae.Error()) == "" {
				t.Fatalf("empty message for argument %q", ae.Arg)
			}
			if !slices.Contains(known, ae.Arg) {
				t.Fatalf("refusal names %q, which is not an argument", ae.Arg)
			}
			return
		}

		if extra != "" && extra != string(OnTimeoutFail) && extra != string(OnTimeoutContinue) {
			t.Fatalf("accepted on_timeout %q", extra)
		}
		if req.Continue != (extra == string(OnTimeoutContinue)) {
			t.Fatalf("on_timeout %q gave Continue %v", extra, req.Continue)
		}
		// path: absolute, clean, an existing directory, not the root or a pseudo-filesystem.
		if !filepath.IsAbs(req.Path) || filepath.Clean(req.Path) != req.Path || strings.ContainsRune(req.Path, 0) {
			t.Fatalf("accepted path %q as %q: not absolute and clean", path, req.Path)
		}
		if info, err := os.Stat(req.Path); err != nil || !info.IsDir() {
			t.Fatalf("accepted path %q, which is not a directory: %v", req.Path, err)
		}
		if req.Path == "/" {
			t.Fatalf("accepted the filesystem root (%q)", path)
		}
		for _, fs := range pseudoFS {
			if req.Path == fs || strings.HasPrefix(req.Path, fs+"/") {
				t.Fatalf("accepted %q, inside %s", req.Path, fs)
			}
		}
		// timeout: 1..600 s; the default when absent or null.
		if req.Timeout < consult.MinTimeout || req.Timeout > consult.MaxTimeout {
			t.Fatalf("accepted timeout %v (from %v, kind %d)", req.Timeout, timeout, kinds&7)
		}
		if !given && req.Timeout != def {
			t.Fatalf("timeout not given gave %v, want the default %v", req.Timeout, def)
		}
		if (len(req.Warnings) > 0) != (given && !req.DryRun && req.Timeout >= consult.TimeoutWarnAt) {
			t.Fatalf("timeout %v with warnings %q", req.Timeout, req.Warnings)
		}
		// patterns: valid, relative, inside.
		if err := files.CheckPattern(req.Pattern); err != nil {
			t.Fatalf("accepted pattern %q that CheckPattern refuses: %v", req.Pattern, err)
		}
		if req.Exclude != "" {
			if err := files.CheckExclude(req.Exclude); err != nil {
				t.Fatalf("accepted exclude_pattern %q that CheckExclude refuses: %v", req.Exclude, err)
			}
		}
		// query: non-blank UTF-8 within the limit, unchanged.
		if req.Query != query || !utf8.ValidString(req.Query) || strings.TrimSpace(req.Query) == "" || consult.Bytes(len(req.Query)) > MaxQueryBytes {
			t.Fatalf("accepted query %q", shortFuzz(query))
		}
		// model: exactly what ParseSpec makes of it.
		if want, err := models.ParseSpec(model); err != nil || req.Model != want {
			t.Fatalf("model %q became %+v; ParseSpec gives %+v, %v", model, req.Model, want, err)
		}
		// output_file: absent, or an absolute clean path in an existing directory, not a directory.
		if req.OutputFile != "" {
			if !filepath.IsAbs(req.OutputFile) || filepath.Clean(req.OutputFile) != req.OutputFile || strings.ContainsRune(req.OutputFile, 0) {
				t.Fatalf("accepted output_file %q as %q", output, req.OutputFile)
			}
			if info, err := os.Stat(filepath.Dir(req.OutputFile)); err != nil || !info.IsDir() {
				t.Fatalf("accepted output_file %q whose directory does not exist", req.OutputFile)
			}
			if info, err := os.Stat(req.OutputFile); err == nil && info.IsDir() {
				t.Fatalf("accepted output_file %q, a directory", req.OutputFile)
			}
		} else if output != "" {
			t.Fatalf("output_file %q was dropped", output)
		}
		if req.DryRun != dryRun {
			t.Fatalf("dry_run %v became %v", dryRun, req.DryRun)
		}
	})
}

func shortFuzz(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
