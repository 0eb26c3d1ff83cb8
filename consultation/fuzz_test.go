package consultation

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/files"
	"github.com/consultmcp/consult/models"
)

// fuzzDirToken in a fuzzed path or output_file stands for a real fixture directory, so that
// seeds can name existing directories on any machine.
const fuzzDirToken = "$DIR"

// FuzzParseArgs builds raw tool arguments from fuzzed values — strings, numbers, booleans,
// and, chosen by the bits of kinds, wrong JSON types, nulls and absent keys — and checks that
// ParseArgs never panics, that every refusal is an *ArgError naming a real argument, and that
// an accepted request keeps the invariants the rest of the call relies on. Seeds are in
// testdata/fuzz/FuzzParseArgs; run with
//
//	go test ./consultation -run '^$' -fuzz '^FuzzParseArgs$' -fuzztime 30s
//
// kinds: bits 0-2 pick timeout's JSON type (number, absent, null, string, boolean, int,
// object, int64); bits 3-4 dry_run's (boolean, absent, string, null); bits 5-6 path's
// (string, absent, number, null); bit 7 sends empty optional strings instead of leaving
// them out.
func FuzzParseArgs(f *testing.F) {
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

	f.Fuzz(func(t *testing.T, path, pattern, query, model, exclude, output string, timeout float64, dryRun bool, kinds uint8, extra string) {
		path = strings.ReplaceAll(path, fuzzDirToken, dir)
		output = strings.ReplaceAll(output, fuzzDirToken, dir)
		raw := map[string]any{ArgPattern: pattern, ArgQuery: query}
		switch kinds & 7 {
		case 0:
			raw[ArgTimeout] = timeout
		case 2:
			raw[ArgTimeout] = nil
		case 3:
			raw[ArgTimeout] = model
		case 4:
			raw[ArgTimeout] = dryRun
		case 5:
			raw[ArgTimeout] = int(timeout) // may saturate: still a number to validate
		case 6:
			raw[ArgTimeout] = map[string]any{"s": timeout}
		case 7:
			raw[ArgTimeout] = int64(timeout)
		}
		switch kinds >> 3 & 3 {
		case 0:
			raw[ArgDryRun] = dryRun
		case 2:
			raw[ArgDryRun] = query
		case 3:
			raw[ArgDryRun] = nil
		}
		switch kinds >> 5 & 3 {
		case 0:
			raw[ArgPath] = path
		case 2:
			raw[ArgPath] = timeout
		case 3:
			raw[ArgPath] = nil
		}
		for k, v := range map[string]string{ArgModel: model, ArgExclude: exclude, ArgOutputFile: output} {
			if v != "" || kinds&128 != 0 {
				raw[k] = v
			}
		}
		unknown := extra != "" && !slices.Contains(knownArgs, extra)
		if unknown {
			raw[extra] = "x"
		}

		req, err := ParseArgs(raw, def)
		if err != nil {
			var ae *ArgError
			if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &ae) {
				t.Fatalf("refusal is not an *ArgError wrapping ErrInvalidArgument: %T %v", err, err)
			}
			if strings.TrimSpace(ae.Msg) == "" {
				t.Fatalf("empty message for argument %q", ae.Arg)
			}
			if !slices.Contains(knownArgs, ae.Arg) && !(unknown && ae.Arg == extra) {
				t.Fatalf("refusal names %q, which is neither an argument nor the unknown one sent (%q)", ae.Arg, extra)
			}
			if unknown && ae.Arg != extra {
				t.Fatalf("unknown argument %q sent, but the refusal names %q: %s", extra, ae.Arg, ae.Msg)
			}
			return
		}

		if unknown {
			t.Fatalf("accepted an unknown argument %q", extra)
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
		if (kinds&7 == 1 || kinds&7 == 2) && req.Timeout != def {
			t.Fatalf("timeout absent or null gave %v, want the default %v", req.Timeout, def)
		}
		if (len(req.Warnings) > 0) != (req.Timeout >= consult.TimeoutWarnAt) {
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
		if req.Query != query || !utf8.ValidString(req.Query) || strings.TrimSpace(req.Query) == "" || consult.Bytes(len(req.Query)) > consult.MaxQueryBytes {
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
		if kinds>>3&3 == 0 && req.DryRun != dryRun {
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
