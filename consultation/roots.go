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
// Symbolic links are resolved first, so a link cannot lead out. It opens path (req.tree),
// beneath its allowed root when there are roots, and the directory
// output_file will be written in (req.output, closed when the call ends): beneath the
// allowed root that holds it, following links only within that root, or with no roots the
// directory as it resolves now (see [outputTarget]).
func checkAllowed(req *request, roots []string) error {
	var outDir string
	if req.OutputFile != "" {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(req.OutputFile)); err == nil {
			outDir = filepath.Clean(dir)
		}
	}
	if len(roots) == 0 {
		tree, err := os.OpenRoot(req.Path)
		if err != nil {
			return argErr(ArgPath, Shown(req.Path), fmt.Sprintf("cannot be opened: %v", unwrapPathError(err)), "")
		}
		req.tree = tree
		if outDir != "" {
			if dir, err := os.OpenRoot(outDir); err == nil {
				req.output = outputTarget{dir: dir}
			}
		}
		return nil
	}
	real, err := filepath.EvalSymlinks(req.Path)
	if err != nil || !within(real, roots) {
		return argErr(ArgPath, Shown(req.Path), fmt.Sprintf("is outside the directories this server may read (%s)", strings.Join(roots, ", ")), "ask for a directory inside them")
	}
	// Opened beneath its allowed root: a name swapped for a link since it was resolved cannot
	// lead the open outside, and once open the handle is the directory checked.
	tree, err := openBeneath(rootOf(real, roots), real)
	if err != nil {
		return argErr(ArgPath, Shown(req.Path), fmt.Sprintf("cannot be opened inside the directories this server may read (%s): %v", strings.Join(roots, ", "), unwrapPathError(err)), "")
	}
	req.tree = tree
	if req.OutputFile != "" {
		root := rootOf(outDir, roots)
		if outDir == "" || root == "" {
			return argErr(ArgOutputFile, Shown(req.OutputFile), fmt.Sprintf("is outside the directories this server may write (%s)", strings.Join(roots, ", ")), "")
		}
		dir, err := openBeneath(root, outDir)
		if err != nil {
			return argErr(ArgOutputFile, Shown(req.OutputFile), fmt.Sprintf(": its directory cannot be opened: %v", unwrapPathError(err)), "")
		}
		req.output = outputTarget{dir: dir}
	}
	return nil
}

// openBeneath opens dir, which lies in root, through an os.Root on root: links are followed
// only where they stay beneath it.
func openBeneath(root, dir string) (*os.Root, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return nil, err
	}
	base, err := os.OpenRoot(root)
	if err != nil || rel == "." {
		return base, err
	}
	defer base.Close()
	return base.OpenRoot(rel)
}

// rootOf returns the root in roots that holds path (resolved), or "".
func rootOf(path string, roots []string) string {
	for _, r := range roots {
		if within(path, []string{r}) {
			return r
		}
	}
	return ""
}
