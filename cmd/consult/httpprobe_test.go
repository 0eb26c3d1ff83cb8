package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// httpProbeEnv, set, makes the test binary act as httpProbe instead of running tests. Its
// value is the server's URL; httpProbeFileEnv names the server's token file.
const (
	httpProbeEnv     = "CONSULT_TEST_HTTP_PROBE"
	httpProbeFileEnv = "CONSULT_TEST_HTTP_PROBE_TOKEN_FILE"
)

// probeReport is what httpProbe found, printed as JSON on stdout.
type probeReport struct {
	ReadErr    string // reading the token file
	NoToken    int    // status of an initialize without a token
	WrongToken int    // status of an initialize with an invented token
}

// httpProbe is a client run as another local user: it tries to read the server's token
// file and to call the server without the token.
func httpProbe() int {
	url := os.Getenv(httpProbeEnv)
	var rep probeReport
	if _, err := os.ReadFile(os.Getenv(httpProbeFileEnv)); err != nil {
		rep.ReadErr = err.Error()
	}
	call := func(auth string) int {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
		if err != nil {
			return -1
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	rep.NoToken = call("")
	rep.WrongToken = call("Bearer guessed-0123456789abcdef")
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
