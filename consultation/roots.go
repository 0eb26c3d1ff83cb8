package consultation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ResolveRoots cleans and resolves symbolic links in the directories a server confines
// consultations to, and checks that each exists.
func ResolveRoots(dirs []string) ([]string, error) {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("--allow-root %q is not an absolute path", d)
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, fmt.Errorf("--allow-root %q: %w", d, unwrapPathError(err))
		}
		if info, err := os.Stat(real); err != nil || !info.IsDir() {
			return nil, fmt.Errorf("--allow-root %q is not a directory", d)
		}
		real = filepath.Clean(real)
		if real == filepath.Dir(real) { // "/" (or a volume root): every path is beneath it
			return nil, fmt.Errorf("--allow-root %q is the file system root, which confines nothing: name the directories the server may read and write", d)
		}
		out = append(out, real)
	}
	return out, nil
}

// within reports whether path (resolved) lies in one of roots.
func within(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+string(filepath.Separator)) || r == string(filepath.Separator) {
			return true
		}
	}
	return false
}

// checkAllowed refuses a request whose path, or output_file, lies outside the allowed roots.
// Symbolic links are resolved first, so a link cannot lead out.
func checkAllowed(req Request, roots []string) error {
	if len(roots) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(req.Path)
	if err != nil || !within(real, roots) {
		return argErr(ArgPath, "path %q is outside the directories this server may read (%s): ask for a directory inside them", req.Path, strings.Join(roots, ", "))
	}
	if req.OutputFile != "" {
		dir, err := filepath.EvalSymlinks(filepath.Dir(req.OutputFile))
		if err != nil || !within(dir, roots) {
			return argErr(ArgOutputFile, "output_file %q is outside the directories this server may write (%s)", req.OutputFile, strings.Join(roots, ", "))
		}
	}
	return nil
}
