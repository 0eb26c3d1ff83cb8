package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/consultmcp/consult/internal/testkit/fake"

	"github.com/consultmcp/consult/internal/testkit/testrun"
)

// binary is the consult command built once for the tests that drive it over stdio.
var binary string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerCommand { // a server started in this process launched a worker
		main()
		os.Exit(0)
	}
	if root := os.Getenv(floorEnv); root != "" { // this process is the floor program (see BenchmarkDryRunOverFloor)
		os.Exit(floorMain(root))
	}
	if os.Getenv(httpProbeEnv) != "" { // this process is the other user's client (see TestHTTPOtherUser)
		os.Exit(httpProbe())
	}
	flag.Parse()
	testrun.SetParallel()
	bin, cleanup, err := testrun.BuildConsult(".", false)
	if err != nil {
		panic(err)
	}
	binary = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = run(context.Background(), args, env(nil), strings.NewReader(""), &o, &e)
	return o.String(), e.String(), err
}

func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"main.go":           "package main\n\nfunc main() {}\n",
		"lib/lib.go":        "package lib\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
		"lib/lib_test.go":   "package lib\n",
		"package-lock.json": "{}\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestVersion(t *testing.T) {
	t.Parallel()
	out, _, err := runCmd(t, "version")
	if err != nil || !strings.HasPrefix(out, "consult ") || !strings.Contains(out, runtime.Version()) {
		t.Errorf("version: %q, %v; want consult, the release and %s", out, err, runtime.Version())
	}
}

// TestVersionOfBuild: the binary built in this checkout names the commit its build
// recorded. (Go records none without git, or in a git worktree, whose .git is a file.)
func TestVersionOfBuild(t *testing.T) {
	t.Parallel()
	info, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(info), "vcs.revision=") {
		t.Skip("the build recorded no commit (no git, or a git worktree)")
	}
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// The commit the build recorded (not HEAD now: a commit made while the tests run would
	// differ from the one built).
	_, rev, _ := strings.Cut(string(info), "vcs.revision=")
	if want := "commit " + rev[:12]; !strings.Contains(string(out), want) {
		t.Errorf("consult version = %q, want it to name %q", out, want)
	}
}

func TestFormatVersion(t *testing.T) {
	t.Parallel()
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"checkout", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: settings("GOOS", "darwin", "GOARCH", "arm64", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "false")},
			"0.1.0-dev, commit 0123456789ab, go1.26.8 darwin/arm64"},
		{"modified checkout", &debug.BuildInfo{GoVersion: "go1.26.8",
			Settings: settings("GOOS", "linux", "GOARCH", "amd64", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "true")},
			"0.1.0-dev, commit 0123456789ab (modified), go1.26.8 linux/amd64"},
		{"untagged commit", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261123173802-97940bde786e+dirty"},
			Settings: settings("GOOS", "linux", "GOARCH", "amd64", "vcs.revision", "97940bde786e0123", "vcs.modified", "true")},
			"0.1.0-dev, commit 97940bde786e (modified), go1.26.8 linux/amd64"},
		{"tagged module", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"},
			Settings: settings("GOOS", "windows", "GOARCH", "amd64")},
			"v0.2.0, commit unknown, go1.26.8 windows/amd64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion("0.1.0-dev", tt.bi); got != tt.want {
				t.Errorf("formatVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{}, {"bogus"}, {"dry-run"}, {"dry-run", "--path", "/tmp"}, {"openai", "--nope"}, {"openai", "k1", "k2"}} {
		_, stderr, err := runCmd(t, args...)
		if code, ok := err.(exitCode); !ok || code != 2 {
			t.Errorf("run(%q) = %v, want exit status 2", args, err)
		}
		if stderr == "" {
			t.Errorf("run(%q) printed nothing to stderr", args)
		}
	}
}

func TestDryRunCommand(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	out, stderr, err := runCmd(t, "dry-run", "--path", dir, "--pattern", "**/*.go", "--exclude", "**/*_test.go", "--model", "gpt-4.1")
	if err != nil {
		t.Fatalf("dry-run: %v\n%s", err, stderr)
	}
	for _, frag := range []string{"2 files", "token count o200k_base", "fits", "lib/lib.go", "excluding"} {
		if !strings.Contains(out, frag) {
			t.Errorf("dry-run output lacks %q:\n%s", frag, out)
		}
	}
	jsonOut, _, err := runCmd(t, "dry-run", "--path", dir, "--pattern", "**/*.go", "--json")
	if err != nil || !strings.Contains(jsonOut, `"files": 3`) {
		t.Errorf("dry-run --json: %v\n%s", err, jsonOut)
	}
	_, stderr, err = runCmd(t, "dry-run", "--path", dir, "--pattern", "**/*.rs")
	if code, ok := err.(exitCode); !ok || code != 1 || !strings.Contains(stderr, "No files matched") {
		t.Errorf("dry-run with no match: err=%v stderr=%q, want exit 1 and an explanation", err, stderr)
	}
	// The command's user is told its flags, not the tool's argument names.
	if !strings.Contains(stderr, `--pattern "**/*.rs" is relative to --path`) || strings.Contains(stderr, "exclude_pattern") {
		t.Errorf("dry-run advice names the tool's arguments, not the flags:\n%s", stderr)
	}
}

func TestParseServePrecedence(t *testing.T) {
	t.Parallel()
	e := env(map[string]string{
		"OPENAI_API_KEY": "env-key", "CONSULT_MODEL": "env-model", "CONSULT_DEFAULT_TIMEOUT": "30",
		"CONSULT_HEARTBEAT": "5s", "CONSULT_IDLE_TIMEOUT": "-3s", "CONSULT_BASE_URL": "http://env",
	})
	var stderr bytes.Buffer
	cfg, err := parseServe("openai", []string{"--model", "flag-model", "arg-key", "--heartbeat", "2s"}, e, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIKey != "arg-key" {
		t.Errorf("api key = %q, want the argument to win over the environment", cfg.APIKey)
	}
	if cfg.Model != "flag-model" || cfg.Heartbeat != 2*time.Second {
		t.Errorf("flags should win: model %q heartbeat %v", cfg.Model, cfg.Heartbeat)
	}
	if cfg.DefaultTimeout != 30*time.Second || cfg.BaseURL != "http://env" {
		t.Errorf("environment should apply: timeout %v base %q", cfg.DefaultTimeout, cfg.BaseURL)
	}
	if cfg.IdleTimeout != 0 {
		t.Errorf("negative idle timeout = %v, want 0 (off)", cfg.IdleTimeout)
	}
	cfg, err = parseServe("gemini", nil, env(map[string]string{"GOOGLE_API_KEY": "g"}), &stderr)
	if err != nil || cfg.APIKey != "g" || cfg.Model != "gemini-3.1-flash-lite" {
		t.Errorf("gemini falls back to GOOGLE_API_KEY and its default model: %+v %v", cfg, err)
	}
	for _, bad := range [][]string{{"--default-timeout", "0"}, {"--default-timeout", "601"}, {"--heartbeat", "1ms"}, {"--log-level", "loud"}, {"--default-timeout", "soon"}} {
		if _, err := parseServe("openai", bad, env(nil), &stderr); err == nil {
			t.Errorf("parseServe(%q) accepted a bad value", bad)
		}
	}
}

// noModelList is the environment that keeps a server started with args off the internet:
// without --base-url it would fetch OpenRouter's public model list, so it fetches none.
func noModelList(args []string) []string {
	if slices.Contains(args, "--base-url") {
		return nil
	}
	return []string{"CONSULT_MODELS_URL=off"}
}

// stdioClient launches the built binary as an MCP server over stdio, as MCP clients do.
func stdioClient(t *testing.T, args ...string) *client.Client {
	t.Helper()
	c, err := client.NewStdioMCPClient(binary, append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, noModelList(args)...), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initClient(t, c, mcp.LATEST_PROTOCOL_VERSION)
	return c
}

// initClient initializes c, a started client, speaking protocol (30 s: a hang guard).
func initClient(t *testing.T, c *client.Client, protocol string) {
	t.Helper()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = protocol
	init.Params.ClientInfo = mcp.Implementation{Name: "consult-test", Version: "1"}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func TestStdioBinaryDryRunAndValidation(t *testing.T) {
	t.Parallel()
	dir := fixture(t)
	c := stdioClient(t, "openrouter")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "consultation"
	req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "dry_run": true}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || !strings.Contains(resultText(res), "3 files") {
		t.Errorf("dry run over stdio: error=%v %s", res.IsError, resultText(res))
	}
	req.Params.Arguments = map[string]any{"path": dir, "pattern": "**/*.go", "query": "q", "timeout": -1}
	res, err = c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), "got -1") {
		t.Errorf("timeout -1 over stdio: error=%v %s", res.IsError, resultText(res))
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestStdioEndsWhenStdinCloses(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "openai")
	cmd.Stdin = strings.NewReader("")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("server did not exit after stdin closed")
	}
	if !strings.Contains(stderr.String(), "no API key") {
		t.Errorf("stderr should warn that no key is set:\n%s", stderr.String())
	}
}

func TestHTTPBeyondLoopbackNeedsAllowRoot(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--http", "127.0.0.1:0"}, true},
		{[]string{"--http", "localhost:8080"}, true},
		{[]string{"--http", "[::1]:8080"}, true},
		{[]string{"--http", ":8080"}, false},
		{[]string{"--http", "0.0.0.0:8080"}, false},
		{[]string{"--http", "192.168.1.5:8080"}, false},
		{[]string{"--http", "0.0.0.0:8080", "--allow-root", t.TempDir()}, true},
	} {
		_, err := parseServe("openai", tc.args, env(nil), &stderr)
		if (err == nil) != tc.ok {
			t.Errorf("parseServe(%q) error = %v, want ok=%v", tc.args, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--allow-root") {
			t.Errorf("refusal should explain --allow-root: %v", err)
		}
	}
	cfg, err := parseServe("openai", nil, env(map[string]string{"CONSULT_ALLOW_ROOT": "/a:/b"}), &stderr)
	if err != nil || len(cfg.AllowRoots) != 2 {
		t.Errorf("CONSULT_ALLOW_ROOT = /a:/b gave %q, %v", cfg.AllowRoots, err)
	}
	_, _, err = runCmd(t, "openai", "--http", "0.0.0.0:0")
	if code, ok := err.(exitCode); !ok || code != 2 {
		t.Errorf("serving beyond loopback without --allow-root: err = %v, want exit 2", err)
	}
}

// TestKeyNeverPrinted runs the binary at debug level through a failing and a succeeding
// call and greps everything it wrote for the key.
// TestQuietStderr: at the default log level a stdio server that starts, lists its tools,
// answers a consultation and stops writes nothing to stderr (Claude Code shows every
// stderr line as an error).
func TestQuietStderr(t *testing.T) {
	t.Parallel()
	srv := fake.New(t, fake.OpenRouter)
	srv.Push(fake.Answer("fine"))
	dir := fixture(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"consultation","arguments":{"path":"` + dir + `","pattern":"**/*.go","query":"q","model":"google/gemini-2.5-pro"}}}`,
	}, "\n") + "\n"
	// The key from the environment, as README says to pass it: one on the command line
	// draws a warning, rightly.
	cmd := exec.Command(binary, "openrouter", "--base-url", srv.BaseURL(), "--results-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "OPENROUTER_API_KEY=sk-or-test")
	stdin, stdout, errb := startPiped(t, cmd)
	io.WriteString(stdin, in)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	answered := false
	for sc.Scan() { // until the call's result; closing stdin earlier would cancel it
		if strings.Contains(sc.Text(), `"id":3,`) {
			answered = strings.Contains(sc.Text(), "fine")
			break
		}
	}
	stdin.Close()
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("binary: %v\n%s", err, errb.String())
	}
	if !answered {
		t.Errorf("the consultation was not answered")
	}
	if errb.Len() != 0 {
		t.Errorf("stderr at the default log level, want nothing:\n%s", errb.String())
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	t.Parallel()
	const key = "sk-or-v1-secret-0123456789abcdef"
	srv := fake.New(t, fake.OpenRouter)
	srv.Push(fake.Script{Status: 401}, fake.Answer("fine"), fake.Script{Status: 500}, fake.Script{Status: 500}, fake.Script{Status: 500}, fake.Script{Status: 500})
	dir := fixture(t)
	var out bytes.Buffer
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"consultation","arguments":{"path":"` + dir + `","pattern":"**/*.go","query":"q","model":"google/gemini-2.5-pro"}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(binary, "openrouter", key, "--base-url", srv.BaseURL(), "--log-level", "debug")
	stdin, stdout, errb := startPiped(t, cmd)
	io.WriteString(stdin, in)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() { // read until the tool call's result; closing stdin earlier would cancel it
		out.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), `"id":2,`) {
			break
		}
	}
	stdin.Close()
	io.Copy(&out, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("binary: %v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "rejected the API key") {
		t.Fatalf("expected an auth failure on stdout:\n%s", out.String())
	}
	for name, b := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
		if strings.Contains(b, key) || strings.Contains(b, key[8:]) {
			t.Errorf("the API key appears on %s", name)
		}
	}
}

// startPiped starts cmd with pipes to its stdin and stdout and its stderr collected, and
// kills it at the end of the test if it is still running.
func startPiped(t testing.TB, cmd *exec.Cmd) (io.WriteCloser, io.Reader, *bytes.Buffer) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &bytes.Buffer{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return stdin, stdout, errb
}
