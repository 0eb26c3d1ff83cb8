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
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/providers"
)

// The smallest values the server's flags take.
const (
	// minHeartbeat bounds the heartbeat from below so a typo cannot flood the client.
	minHeartbeat = 100 * time.Millisecond
	// minInflight is the smallest --max-inflight: below it even a small tree would be refused.
	minInflight consult.Bytes = 16 << 20
)

// usage is the help text, with the paragraph on providers filled in from the registry.
var usage = strings.Replace(usageText, "{providers}\n", providerUsage(), 1)

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

	Prices    string `json:"prices,omitempty"`     // the user's prices file; "": none
	ModelsURL string `json:"models_url,omitempty"` // where the model list is fetched; "": the provider's default, "off": none
	ZDR       bool   `json:"zdr,omitempty"`        // send requests only to endpoints that keep no data (openrouter)
	LongCache bool   `json:"long_cache,omitempty"` // keep the provider's prompt cache longer (OpenAI 24 h, Anthropic 1 h)
}

// value is a flag.Value of type T that parse reads.
type value[T any] struct {
	p     *T
	parse func(string) (T, error)
}

func newValue[T any](p *T, parse func(string) (T, error)) value[T] { return value[T]{p, parse} }

func (v value[T]) String() string {
	if v.p == nil {
		return ""
	}
	if f, ok := any(*v.p).(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64) // a price: 0.50, never 5e-01
	}
	return fmt.Sprint(*v.p)
}

func (v value[T]) Set(s string) error {
	x, err := v.parse(s)
	if err == nil {
		*v.p = x
	}
	return err
}

// IsBoolFlag lets a switch (a value[bool]) stand alone on the command line: --zdr.
func (v value[T]) IsBoolFlag() bool {
	_, ok := any(v.p).(*bool)
	return ok
}

// parseSwitch reads a switch's value: 1, true, yes or on (0, false, no, off).
func parseSwitch(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a switch: write 1 or 0 (true or false)", s)
}

// parseDollars reads a price in US dollars: a number, 0 or more ("5", "0.50", "$5").
func parseDollars(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("%q is not a price: write US dollars as a number, 0 or more, e.g. 5 or 0.50", s)
	}
	return f, nil
}

// parseDuration reads a Go duration or a plain number of seconds.
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

// parseBytes reads a size: a number of bytes, or a number with a unit, binary (KiB, MiB,
// GiB, TiB; K, M, G, T the same) or decimal (KB, MB, GB, TB): 2GiB, 512M, 1.5GB.
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

// listValue is a repeatable flag: its first use replaces the list its variable gave.
type listValue struct {
	list    *[]string
	split   func(string) []string // splits the variable's value into items
	flagged bool
}

func (l *listValue) String() string { return "" }

func (l *listValue) Set(s string) error {
	if !l.flagged {
		*l.list, l.flagged = nil, true
	}
	*l.list = append(*l.list, s)
	return nil
}

// setting is a flag, and the variable CONSULT_<NAME> that sets it when the flag is not
// given; value is a *string, an *int, a *listValue or another flag.Value.
type setting struct {
	name, help string
	value      any
}

// bind sets each setting from its variable, when that is set, and then defines its flag in
// fs: flags take precedence over variables, which take precedence over defaults.
func bind(fs *flag.FlagSet, getenv func(string) string, settings []setting) error {
	for _, s := range settings {
		env := "CONSULT_" + strings.ToUpper(strings.ReplaceAll(s.name, "-", "_"))
		v := getenv(env)
		switch p := s.value.(type) {
		case *string:
			if v != "" {
				*p = v
			}
			fs.StringVar(p, s.name, *p, s.help)
		case *int:
			if v != "" {
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					return fmt.Errorf("%s: %q is not a whole number", env, v)
				}
				*p = n
			}
			fs.IntVar(p, s.name, *p, s.help)
		case *listValue:
			if v != "" {
				*p.list = p.split(v)
			}
			fs.Var(p, s.name, s.help)
		case flag.Value:
			if v != "" {
				if err := p.Set(v); err != nil {
					return fmt.Errorf("%s: %w", env, err)
				}
			}
			fs.Var(p, s.name, s.help)
		default:
			panic(fmt.Sprintf("setting %s: a %T is not a flag", s.name, s.value))
		}
	}
	return nil
}

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
	fs := flag.NewFlagSet("consult "+provider, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.HTTPToken = getenv("CONSULT_HTTP_TOKEN") // no flag: a token in the arguments is visible in ps
	err := bind(fs, getenv, []setting{
		{"base-url", "provider endpoint URL", &cfg.BaseURL},
		{"model", "default model when a call names none", &cfg.Model},
		{"default-timeout", "deadline of a call that sets none", newValue(&cfg.DefaultTimeout, parseDuration)},
		{"heartbeat", "interval between progress notifications", newValue(&cfg.Heartbeat, parseDuration)},
		{"idle-timeout", "cancel a call whose upstream is silent this long (0 = off)", newValue(&cfg.IdleTimeout, parseDuration)},
		{"log-level", "debug, info, warn or error", &level},
		{"http", "serve streamable HTTP at this address", &cfg.HTTPAddr},
		{"http-token-file", "read the HTTP bearer token from the first line of this file (mode 0600)", &cfg.HTTPTokenFile},
		{"http-allow-origin", "accept HTTP requests whose Origin header is this scheme://host[:port] (repeatable)",
			&listValue{list: &cfg.HTTPAllowOrigins, split: func(s string) []string { return strings.Split(s, ",") }}},
		{"allow-root", "confine consultations to this directory (repeatable)", &listValue{list: &cfg.AllowRoots, split: filepath.SplitList}},
		{"results-dir", "directory for background consultations' results", &cfg.ResultsDir},
		{"results-ttl", "how long a background result is kept", newValue(&cfg.ResultsTTL, parseDuration)},
		{"background-limit", "how long a consultation may run in all with on_timeout continue", newValue(&cfg.BackgroundLimit, parseDuration)},
		{"background-workers", "how many background consultations may run at once", &cfg.BackgroundWorkers},
		{"max-inflight", "bound on the memory calls in flight hold, server-wide (2GiB, 512MiB); a call that would pass it waits", newValue(&cfg.MaxInflight, parseBytes)},
		{"page-bytes", "answers longer than this many bytes are returned in pages (0: never)", &cfg.PageBytes},
		{"budget-usd", "cap on what consultations cost per UTC day, in US dollars, across servers sharing the results directory (0: none)", newValue(&cfg.BudgetUSD, parseDollars)},
		{"prices", "a prices file (JSON) whose prices, windows and expiry dates win over every other source", &cfg.Prices},
		{"models-url", "where the model list (prices, windows) is fetched; \"off\" for none", &cfg.ModelsURL},
		{"zdr", "zero data retention: send requests only to endpoints that keep no data (openrouter)", newValue(&cfg.ZDR, parseSwitch)},
		{"long-cache", "keep the prompt cache longer: OpenAI 24 h (same prices), Anthropic models on OpenRouter 1 h (cache writes at 2x the prompt price instead of 1.25x)", newValue(&cfg.LongCache, parseSwitch)},
	})
	if err != nil {
		return cfg, err
	}
	fs.BoolVar(&cfg.Test, "test", false, "send a one-line query, print the answer, model and timing, and exit")
	quietUsage(fs, stderr, "consult "+provider)
	positional, err := parseInterspersed(fs, args)
	if helpAsked(err) {
		return cfg, helpRequest{fs}
	}
	if err != nil {
		return cfg, errUsage
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
	cfg.IdleTimeout = max(cfg.IdleTimeout, 0) // DESIGN: negative values are 0 (off)
	if cfg.ResultsTTL < time.Second {
		return cfg, fmt.Errorf("--results-ttl %s: must be at least 1s", cfg.ResultsTTL)
	}
	if cfg.BackgroundLimit < consult.MinTimeout {
		return cfg, fmt.Errorf("--background-limit %s: must be at least %s", cfg.BackgroundLimit, consult.MinTimeout)
	}
	if cfg.BackgroundWorkers < 1 {
		return cfg, fmt.Errorf("--background-workers %d: must be at least 1", cfg.BackgroundWorkers)
	}
	if cfg.PageBytes != 0 && cfg.PageBytes < background.MinPageBytes {
		return cfg, fmt.Errorf("--page-bytes %d: must be 0 (answers are never paged) or at least %d: smaller pages make a long answer take thousands of calls", cfg.PageBytes, background.MinPageBytes)
	}
	if cfg.ZDR && !spec.ZDR {
		return cfg, fmt.Errorf("--zdr (or CONSULT_ZDR): %s cannot be asked per request to keep no data: what it keeps is set by your account's agreement with it. Serve with consult openrouter --zdr, which sends each request only to endpoints that keep none, or drop --zdr", provider)
	}
	if cfg.MaxInflight < minInflight {
		return cfg, fmt.Errorf("--max-inflight %s: must be at least %s", cfg.MaxInflight, minInflight)
	}
	if cfg.BudgetUSD > 0 && cfg.ResultsDir == "" {
		return cfg, fmt.Errorf("--budget-usd %g: the daily spend is kept in the results directory, and there is none: pass --results-dir DIR", cfg.BudgetUSD)
	}
	if cfg.Prices != "" {
		abs, err := filepath.Abs(cfg.Prices)
		if err != nil {
			return cfg, fmt.Errorf("--prices %q: %w", cfg.Prices, err)
		}
		cfg.Prices = abs
	}
	if u := cfg.ModelsURL; u != "" && u != "off" && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return cfg, fmt.Errorf("--models-url %q: give an http(s) URL, or \"off\" to fetch no model list", u)
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
	return err == nil && (host == "localhost" || net.ParseIP(host).IsLoopback()) // nil, not an IP, is no loopback
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

// pseudoVersion matches the version Go gives a build of an untagged commit
// (v0.0.0-20261123173802-97940bde786e, +dirty when modified): the commit says more.
var pseudoVersion = regexp.MustCompile(`-(\d+\.)?\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// formatVersion is what `consult version` prints after "consult ": the release, the commit
// it was built from and the Go toolchain, as bi (nil when the binary has no build info)
// records them: "0.1.0-dev, commit 0123456789ab (modified), go1.26.8 linux/amd64". A tagged
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
			commit = s.Value[:min(len(s.Value), 12)]
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
