package files

import (
	"fmt"
	"slices"

	"github.com/consultmcp/consult/internal/leaf/secrets"
)

// SkipExamples is how many example paths the report lists for each reason a file was
// left out: enough to recognise the pattern, short enough to read.
const SkipExamples = 3

// Reason says why a file or directory matching the pattern was left out.
type Reason int

// The reasons, in the order Gathered.Skipped lists them.
const (
	// Ignored: excluded by a .gitignore, a .ignore or the repository's info/exclude.
	Ignored Reason = iota + 1
	// DefaultExcluded: a version-control, dependency, cache or build-output directory
	// (listed in the package documentation), pruned without being walked.
	DefaultExcluded
	// LockFile: a dependency lock file such as go.sum or package-lock.json.
	LockFile
	// Binary: a NUL byte in the first SniffBytes bytes.
	Binary
	// Secret: a file that may hold a credential, by name (.env, *.pem, id_rsa…) or by
	// content (a PEM private key block).
	Secret
	// TooLarge: bigger than the per-file cap; such files are left out, not truncated.
	TooLarge
	// OverTotal: the file came, in path order, after the total-size or file-count cap
	// was reached.
	OverTotal
	// Outside: a symbolic link leading out of the root directory.
	Outside
	// Unreadable: permission denied, a dangling or looping symbolic link, or not a
	// regular file (fifo, socket, device).
	Unreadable
	// ExcludedByPattern: matched the caller's exclude pattern.
	ExcludedByPattern
	// IgnoreFileUnused: an ignore file (.gitignore, .ignore, info/exclude) that was not
	// applied because it is a symbolic link (git does not follow those either), not a
	// regular file, unreadable, or larger than 1 MiB. Its examples are the ignore files.
	IgnoreFileUnused

	numReasons = iota + 1
)

var reasonLabels = [numReasons]string{
	Ignored:           "ignored by .gitignore, .ignore or info/exclude",
	DefaultExcluded:   "version-control, dependency, cache or build-output directory",
	LockFile:          "lock file",
	Binary:            "binary",
	Secret:            "may hold secrets",
	TooLarge:          "larger than the per-file cap",
	OverTotal:         "over the total size or file-count cap",
	Outside:           "symlink leading outside the directory",
	Unreadable:        "unreadable or not a regular file",
	ExcludedByPattern: "matched exclude_pattern",
	IgnoreFileUnused:  "ignore file not applied (a link, not a regular file, or over 1 MiB)",
}

// String returns a short human label, such as "lock file" or "binary".
func (r Reason) String() string {
	if r > 0 && r < numReasons {
		return reasonLabels[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Skip counts the files left out for one reason.
type Skip struct {
	// Reason is why they were left out.
	Reason Reason
	// Count is how many: files, plus pruned directories counted once each.
	Count int
	// Examples holds up to SkipExamples of their paths, relative to the root and
	// sorted, directories with a trailing "/".
	Examples []string
}

// skipCounter accumulates skips; it is owned by one goroutine.
type skipCounter struct {
	count    [numReasons]int
	examples [numReasons][]string
}

// add counts path under r, keeping the smallest paths as examples.
func (s *skipCounter) add(r Reason, path string) {
	s.count[r]++
	ex := s.examples[r]
	if len(ex) == SkipExamples && path >= ex[len(ex)-1] {
		return
	}
	i, _ := slices.BinarySearch(ex, path)
	ex = slices.Insert(ex, i, path)
	if len(ex) > SkipExamples {
		ex = ex[:SkipExamples]
	}
	s.examples[r] = ex
}

// merge adds the counts and examples of o to s.
func (s *skipCounter) merge(o *skipCounter) {
	for r := range o.count {
		s.count[r] += o.count[r]
		for _, p := range o.examples[r] {
			s.count[r]--
			s.add(Reason(r), p)
		}
	}
}

// list returns the non-empty skips in Reason order.
func (s *skipCounter) list() []Skip {
	var out []Skip
	for r := Reason(1); r < numReasons; r++ {
		if s.count[r] > 0 {
			out = append(out, Skip{Reason: r, Count: s.count[r], Examples: slices.Clone(s.examples[r])})
		}
	}
	return out
}

// Why a file may hold a secret: the words Withheld.Why uses, by name or by content. The
// package documentation lists every rule; the name lists follow the credential files of the
// major tools and the path signatures of gitleaks (pkcs12-file) and gitrob/shhgit.
const (
	whyEnv         = "environment file"
	whyKeyFile     = "key or certificate store"
	whyCredentials = "credentials file"
	whyHistory     = "shell or REPL history"
	whyTerraform   = "Terraform variables or state"
	whyClientConf  = "MCP or agent client configuration (holds API keys)"
	whySystem      = "system credential file"
)

// heldWhy says why a file is held back for what secrets.Scan found in its content.
var heldWhy = map[secrets.Held]string{
	secrets.HeldPrivateKey:     "holds a private key",
	secrets.HeldEncodedKey:     "holds a private key in base64",
	secrets.HeldPuTTYKey:       "holds a PuTTY private key",
	secrets.HeldJWK:            "holds a private JSON Web Key",
	secrets.HeldPasswordHashes: "holds shadow or htpasswd password hashes",
	secrets.HeldUnchecked:      "more possible secrets than the scan checks",
}
