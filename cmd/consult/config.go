package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/background"
	"github.com/consultmcp/consult/providers"
)

// Server limits only the command line sets.
const (
	// minHeartbeat bounds the heartbeat from below so a typo cannot flood the client.
	minHeartbeat = 100 * time.Millisecond
)

// usage is the help text, with the paragraph on providers filled in from the registry.
var usage = strings.Replace(usageText, "{providers}\n", providerUsage(), 1)

// knownProvider reports whether name is a provider in the registry.
func knownProvider(name string) bool {
	_, ok := providers.Lookup(name)
	return ok
}

// providerUsage is the usage text's paragraph on providers, from the registry:
// "Providers: openrouter, openai, gemini. The API key comes from the argument or from
// OPENROUTER_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY (then GOOGLE_API_KEY)."
func providerUsage() string {
	var keys []string
	for _, s := range providers.Registry() {
		k := s.KeyEnv[0]
		if len(s.KeyEnv) > 1 {
			k += " (then " + strings.Join(s.KeyEnv[1:], ", ") + ")"
		}
		keys = append(keys, k)
	}
	return fmt.Sprintf("Providers: %s. The API key comes from the argument or from\n%s.\n",
		strings.Join(providers.Names(), ", "), strings.Join(keys, ", "))
}

// config is the server's configuration after flags, environment and defaults: resolved
// once, by parseServe, and given whole to each background worker (see worker.go), which
// builds its service from it exactly as the server does.
type config struct {
	Provider       string        `json:"provider"`
	APIKey         string        `json:"api_key"`
	KeyOnCmdLine   bool          `json:"-"` // the key came as an argument, visible to other users in ps
	BaseURL        string        `json:"base_url,omitempty"`
	Model          string        `json:"model,omitempty"`
	DefaultTimeout time.Duration `json:"default_timeout"`
	Heartbeat      time.Duration `json:"heartbeat"`
	IdleTimeout    time.Duration `json:"idle_timeout"`
	LogLevel       slog.Level    `json:"log_level"`
	HTTPAddr       string        `json:"http_addr,omitempty"`
	Test           bool          `json:"-"`

	HTTPTokenFile    string   `json:"-"` // --http-token-file: where the bearer token is kept
	HTTPToken        string   `json:"-"` // CONSULT_HTTP_TOKEN: the bearer token itself
	HTTPAllowOrigins []string `json:"-"` // Origin header values a request may carry; none by default

	AllowRoots []string `json:"allow_roots,omitempty"`

	ResultsDir        string        `json:"results_dir"`        // where background answers are saved
	ResultsTTL        time.Duration `json:"results_ttl"`        // how long a saved answer is kept
	BackgroundLimit   time.Duration `json:"background_limit"`   // how long a consultation may run after its call returned
	BackgroundWorkers int           `json:"background_workers"` // how many background workers may run at once

	MaxInflight consult.Bytes `json:"max_inflight"` // the bound on bytes in flight

	PageBytes int `json:"page_bytes"` // answers longer than this are returned in pages; 0: never

	BudgetUSD float64 `json:"budget_usd,omitempty"` // the daily budget across servers sharing ResultsDir; 0: none

	InWorker bool `json:"-"` // this process is a background worker, not a server
}

// dollarsValue is a flag.Value for a price in US dollars: a number, 0 or more ("5", "0.50",
// "$5").
type dollarsValue struct{ v *float64 }

func (d dollarsValue) String() string {
	if d.v == nil {
		return ""
	}
	return strconv.FormatFloat(*d.v, 'f', -1, 64)
}

func (d dollarsValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return fmt.Errorf("%q is not a price: write US dollars as a number, 0 or more, e.g. 5 or 0.50", s)
	}
	*d.v = f
	return nil
}

// durationValue is a flag.Value for durations written as Go durations or plain seconds.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write 30s, 2m or a number of seconds", s)
	}
	return d, nil
}

// bytesValue is a flag.Value for sizes: a number of bytes, or a number with a unit, binary
// (KiB, MiB, GiB, TiB; K, M, G, T the same) or decimal (KB, MB, GB, TB): 2GiB, 512M, 1.5GB.
type bytesValue struct{ b *consult.Bytes }

func (v bytesValue) String() string {
	if v.b == nil {
		return ""
	}
	return v.b.String()
}

func (v bytesValue) Set(s string) error {
	b, err := parseBytes(s)
	if err != nil {
		return err
	}
	*v.b = b
	return nil
}

// byteUnits are the units parseBytes takes, longest first within each letter.
var byteUnits = []struct {
	name string
	size float64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

func parseBytes(s string) (consult.Bytes, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	unit := 1.0
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(t, u.name); ok {
			t, unit = strings.TrimSpace(num), u.size
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || f*unit >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size: write 2GiB, 512MiB, 1.5GB or a number of bytes", s)
	}
	return consult.Bytes(f * unit), nil
}

// intSetter sets *n from a decimal integer.
func intSetter(n *int) func(string) error {
	return func(s string) error {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		*n = v
		return nil
	}
}

// minPageBytes is the smallest page: smaller ones make a long answer take too many calls.
const minPageBytes = 4096

// minInflight is the smallest --max-inflight: below it even a small tree would be refused.
const minInflight consult.Bytes = 16 << 20

// errUsage marks a command-line mistake; the message was printed with the usage.
var errUsage = errors.New("usage")

// parseServe reads `<provider> [api-key] [flags]` with flags taking precedence over
// CONSULT_* variables, which take precedence over defaults.
func parseServe(provider string, args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	spec, _ := providers.Lookup(provider)
	cfg := config{
		Provider:       provider,
		Model:          spec.DefaultModel,
		DefaultTimeout: consult.DefaultTimeout,
		Heartbeat:      consult.DefaultHeartbeat,
		LogLevel:       slog.LevelWarn,

		ResultsDir:      defaultResultsDir(getenv),
		ResultsTTL:      consult.DefaultResultsTTL,
		BackgroundLimit: consult.DefaultBackgroundLimit,

		BackgroundWorkers: consult.DefaultBackgroundWorkers,
		MaxInflight:       consultation.DefaultInflight(),
		PageBytes:         background.DefaultPageBytes,
	}
	// warn by default: MCP clients such as Claude Code show every stderr line of a stdio
	// server as an error, so normal operation (start-up, each call's summary, at info)
	// writes nothing there; --log-level info shows it.
	level := "warn"
	// Environment first, so flags override it.
	envs := []struct {
		name string
		set  func(string) error
	}{
		{"CONSULT_BASE_URL", func(s string) error { cfg.BaseURL = s; return nil }},
		{"CONSULT_MODEL", func(s string) error { cfg.Model = s; return nil }},
		{"CONSULT_DEFAULT_TIMEOUT", durationValue{&cfg.DefaultTimeout}.Set},
		{"CONSULT_HEARTBEAT", durationValue{&cfg.Heartbeat}.Set},
		{"CONSULT_IDLE_TIMEOUT", durationValue{&cfg.IdleTimeout}.Set},
		{"CONSULT_LOG_LEVEL", func(s string) error { level = s; return nil }},
		{"CONSULT_HTTP", func(s string) error { cfg.HTTPAddr = s; return nil }},
		{"CONSULT_HTTP_TOKEN_FILE", func(s string) error { cfg.HTTPTokenFile = s; return nil }},
		{"CONSULT_HTTP_TOKEN", func(s string) error { cfg.HTTPToken = s; return nil }},
		{"CONSULT_HTTP_ALLOW_ORIGIN", func(s string) error { cfg.HTTPAllowOrigins = strings.Split(s, ","); return nil }},
		{"CONSULT_ALLOW_ROOT", func(s string) error { cfg.AllowRoots = filepath.SplitList(s); return nil }},
		{"CONSULT_RESULTS_DIR", func(s string) error { cfg.ResultsDir = s; return nil }},
		{"CONSULT_RESULTS_TTL", durationValue{&cfg.ResultsTTL}.Set},
		{"CONSULT_BACKGROUND_LIMIT", durationValue{&cfg.BackgroundLimit}.Set},
		{"CONSULT_BACKGROUND_WORKERS", intSetter(&cfg.BackgroundWorkers)},
		{"CONSULT_MAX_INFLIGHT", bytesValue{&cfg.MaxInflight}.Set},
		{"CONSULT_PAGE_BYTES", intSetter(&cfg.PageBytes)},
		{"CONSULT_BUDGET_USD", dollarsValue{&cfg.BudgetUSD}.Set},
	}
	for _, e := range envs {
		if v := getenv(e.name); v != "" {
			if err := e.set(v); err != nil {
				return cfg, fmt.Errorf("%s: %w", e.name, err)
			}
		}
	}

	fs := flag.NewFlagSet("consult "+provider, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.BaseURL, "base-url", cfg.BaseURL, "provider endpoint URL")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "default model when a call names none")
	fs.Var(durationValue{&cfg.DefaultTimeout}, "default-timeout", "deadline of a call that sets none")
	fs.Var(durationValue{&cfg.Heartbeat}, "heartbeat", "interval between progress notifications")
	fs.Var(durationValue{&cfg.IdleTimeout}, "idle-timeout", "cancel a call whose upstream is silent this long (0 = off)")
	fs.StringVar(&level, "log-level", level, "debug, info, warn or error")
	fs.StringVar(&cfg.HTTPAddr, "http", cfg.HTTPAddr, "serve streamable HTTP at this address")
	fs.StringVar(&cfg.HTTPTokenFile, "http-token-file", cfg.HTTPTokenFile, "read the HTTP bearer token from the first line of this file (mode 0600)")
	var flagOrigins []string
	fs.Func("http-allow-origin", "accept HTTP requests whose Origin header is this scheme://host[:port] (repeatable)", func(s string) error {
		flagOrigins = append(flagOrigins, s)
		return nil
	})
	fs.StringVar(&cfg.ResultsDir, "results-dir", cfg.ResultsDir, "directory for background consultations' results")
	fs.Var(durationValue{&cfg.ResultsTTL}, "results-ttl", "how long a background result is kept")
	fs.Var(durationValue{&cfg.BackgroundLimit}, "background-limit", "how long a consultation may run in all with on_timeout continue")
	fs.IntVar(&cfg.BackgroundWorkers, "background-workers", cfg.BackgroundWorkers, "how many background consultations may run at once")
	fs.Var(bytesValue{&cfg.MaxInflight}, "max-inflight", "bound on the memory calls in flight hold, server-wide (2GiB, 512MiB); a call that would pass it waits")
	fs.IntVar(&cfg.PageBytes, "page-bytes", cfg.PageBytes, "answers longer than this many bytes are returned in pages (0: never)")
	fs.Var(dollarsValue{&cfg.BudgetUSD}, "budget-usd", "cap on what consultations cost per UTC day, in US dollars, across servers sharing the results directory (0: none)")
	fs.BoolVar(&cfg.Test, "test", false, "send a one-line query, print the answer, model and timing, and exit")
	var flagRoots []string
	fs.Func("allow-root", "confine consultations to this directory (repeatable)", func(s string) error {
		flagRoots = append(flagRoots, s)
		return nil
	})
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return cfg, errUsage
	}
	if len(flagRoots) > 0 {
		cfg.AllowRoots = flagRoots
	}
	if len(flagOrigins) > 0 {
		cfg.HTTPAllowOrigins = flagOrigins
	}
	if cfg.HTTPAllowOrigins, err = parseOrigins(cfg.HTTPAllowOrigins); err != nil {
		return cfg, err
	}
	if cfg.HTTPAddr != "" && len(cfg.AllowRoots) == 0 && !loopback(cfg.HTTPAddr) {
		return cfg, fmt.Errorf("--http %s listens beyond this machine, and without --allow-root any client that reaches it could read any directory the server can and send it to the model; pass --allow-root DIR (repeatable) to confine it, or listen on 127.0.0.1", cfg.HTTPAddr)
	}
	switch len(positional) {
	case 0:
	case 1:
		cfg.APIKey = positional[0]
		cfg.KeyOnCmdLine = cfg.APIKey != ""
	default:
		return cfg, fmt.Errorf("too many arguments: %d after the provider; expected at most an API key", len(positional))
	}
	if cfg.APIKey == "" {
		for _, k := range spec.KeyEnv {
			if v := getenv(k); v != "" {
				cfg.APIKey = v
				break
			}
		}
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return cfg, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	if cfg.DefaultTimeout < consult.MinTimeout || cfg.DefaultTimeout > consult.MaxTimeout {
		return cfg, fmt.Errorf("--default-timeout %s: must be from %s to %s", cfg.DefaultTimeout, consult.MinTimeout, consult.MaxTimeout)
	}
	if cfg.Heartbeat < minHeartbeat {
		return cfg, fmt.Errorf("--heartbeat %s: must be at least %s", cfg.Heartbeat, minHeartbeat)
	}
	if cfg.IdleTimeout < 0 {
		cfg.IdleTimeout = 0 // DESIGN: negative values are 0 (off)
	}
	if cfg.ResultsTTL < time.Second {
		return cfg, fmt.Errorf("--results-ttl %s: must be at least 1s", cfg.ResultsTTL)
	}
	if cfg.BackgroundLimit < consult.MinTimeout {
		return cfg, fmt.Errorf("--background-limit %s: must be at least %s", cfg.BackgroundLimit, consult.MinTimeout)
	}
	if cfg.BackgroundWorkers < 1 {
		return cfg, fmt.Errorf("--background-workers %d: must be at least 1", cfg.BackgroundWorkers)
	}
	if cfg.PageBytes != 0 && cfg.PageBytes < minPageBytes {
		return cfg, fmt.Errorf("--page-bytes %d: must be 0 (answers are never paged) or at least %d", cfg.PageBytes, minPageBytes)
	}
	if cfg.MaxInflight < minInflight {
		return cfg, fmt.Errorf("--max-inflight %s: must be at least %s", cfg.MaxInflight, minInflight)
	}
	if cfg.BudgetUSD > 0 && cfg.ResultsDir == "" {
		return cfg, fmt.Errorf("--budget-usd %g: the daily spend is kept in the results directory, and there is none: pass --results-dir DIR", cfg.BudgetUSD)
	}
	if cfg.ResultsDir != "" {
		abs, err := filepath.Abs(cfg.ResultsDir)
		if err != nil {
			return cfg, fmt.Errorf("--results-dir %q: %w", cfg.ResultsDir, err)
		}
		cfg.ResultsDir = abs
	}
	return cfg, nil
}

// defaultResultsDir is the XDG state directory's consult/results: $XDG_STATE_HOME, else
// ~/.local/state (on Windows %LocalAppData%). "" when there is no home to put it in.
func defaultResultsDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "consult", "results")
	}
	if runtime.GOOS == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "consult", "results")
		}
		return ""
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "consult", "results")
	}
	return ""
}

// loopback reports whether addr (host:port) listens only on this machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseInterspersed parses flags that may come before or after positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// versionString is what `consult version` prints after "consult ": the release, the commit
// it was built from and the Go toolchain, as the build info records them.
func versionString() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(consult.Version, bi)
}

// pseudoVersion matches the version Go gives a build of an untagged commit
// (v0.0.0-20261123173802-97940bde786e, +dirty when modified): the commit says more.
var pseudoVersion = regexp.MustCompile(`-(\d+\.)?\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// formatVersion is versionString for release and bi (nil when the binary has no build
// info): "0.1.0-dev, commit 0123456789ab (modified), go1.26.8 linux/amd64". A tagged
// module version wins over release; the commit is "unknown" when the
// binary was built outside a git checkout or with -buildvcs=false.
func formatVersion(release string, bi *debug.BuildInfo) string {
	if bi == nil {
		return fmt.Sprintf("%s, commit unknown, %s %s/%s", release, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" && !pseudoVersion.MatchString(v) {
		release = v
	}
	commit, modified := "unknown", false
	goos, goarch := runtime.GOOS, runtime.GOARCH
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
			if len(commit) > 12 {
				commit = commit[:12]
			}
		case "vcs.modified":
			modified = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s, commit %s, %s %s/%s", release, commit, bi.GoVersion, goos, goarch)
}
