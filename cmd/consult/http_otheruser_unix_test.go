//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestHTTPTokenFileOwnedByOther: run as root, a 0600 token file that belongs to nobody is
// refused (its owner could change the token), naming the fix; before, its mode was all that
// was checked.
func TestHTTPTokenFileOwnedByOther(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test gives the token file to the user nobody")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("nobodys-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
	tok, err := resolveHTTPToken(p, "")
	if !errors.Is(err, errTokenFileNotOwned) || !strings.Contains(err.Error(), "--http-token-file") {
		t.Fatalf("token file owned by nobody: %+v, %v; want errTokenFileNotOwned", tok, err)
	}
	t.Log(err)
}

// TestHTTPOtherUser runs the binary as root with --http on loopback and a 0600 token file,
// then a client as nobody: it can neither read the token file nor call the server without
// the token. mcp-go's client with the token works.
func TestHTTPOtherUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test starts the server as root and a client as the user nobody")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody to run the client as: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)

	// A directory anyone may enter, so that only the token file's own mode protects it.
	dir, err := os.MkdirTemp("", "consult-http-otheruser")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "root-only-token-0123456789abcdef"
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	probe := copyExecutable(t, filepath.Join(dir, "probe"))

	endpoint, _, logs := startHTTPBinary(t, "--http-token-file", tokenFile)

	pc := exec.Command(probe, "-test.run=^$")
	pc.Env = []string{httpProbeEnv + "=" + endpoint, httpProbeFileEnv + "=" + tokenFile}
	pc.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := pc.Output()
	if err != nil {
		t.Fatalf("client as nobody: %v\n%s", err, out)
	}
	var rep probeReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("client as nobody printed %q: %v", out, err)
	}
	if !strings.Contains(rep.ReadErr, "permission denied") {
		t.Errorf("nobody reading the 0600 token file: %q, want permission denied", rep.ReadErr)
	}
	if rep.NoToken != 401 || rep.WrongToken != 401 {
		t.Errorf("nobody calling without the token: %d, with a guessed one: %d; want 401 and 401", rep.NoToken, rep.WrongToken)
	}

	c := httpClient(t, endpoint, token)
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list with the token: %v", err)
	}
	if len(tools.Tools) == 0 {
		t.Error("tools/list with the token: no tools")
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the server printed the configured token:\n%s", logs.String())
	}
}

// startHTTPBinary starts the built binary serving HTTP on a free loopback port with the
// given extra arguments (and CONSULT_HTTP_TOKEN from env, if any), waits for the URL it
// prints, and stops it with SIGTERM at the end of the test. It returns the URL, the process
// and its stderr as it goes.
func startHTTPBinary(t *testing.T, args ...string) (string, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	return startHTTPBinaryEnv(t, nil, args...)
}

func startHTTPBinaryEnv(t *testing.T, env []string, args ...string) (string, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"openai", "--http", "127.0.0.1:0", "--results-dir", t.TempDir()}, args...)...)
	cmd.Env = append(append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, noModelList(args)...), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	logs := &lockedBuffer{}
	url := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP over HTTP at (\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case endpoint := <-url:
		return endpoint, cmd, logs
	case <-time.After(15 * time.Second):
		t.Fatalf("the server printed no URL within 15 s:\n%s", logs.String())
	}
	return "", nil, nil
}

// copyExecutable copies the running test binary to path, executable by anyone.
func copyExecutable(t *testing.T, path string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
