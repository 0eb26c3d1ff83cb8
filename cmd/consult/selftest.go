package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
)

// selfTestQuery is the one-line question `--test` asks: cheap, and its answer shows the
// model read the file it was sent.
const selfTestQuery = "Reply with one short sentence: what does the file probe.txt say?"

// runSelfTest sends one tiny consultation through the configured provider and prints the
// answer, model and timing, so a user can check a key and endpoint in one command. It exits
// non-zero when the call fails.
func runSelfTest(ctx context.Context, cfg config, svc *consultation.Service, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "consult-test")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(dir+"/probe.txt", []byte("The consult self-test reached the model.\n"), 0o600); err != nil {
		return err
	}
	start := time.Now()
	res := svc.Consult(ctx, consultation.Request{Path: dir, Pattern: "probe.txt", Query: selfTestQuery, Timeout: cfg.DefaultTimeout}, nil)
	elapsed := time.Since(start)
	if res.IsError {
		fmt.Fprintf(stderr, "consult %s --test failed after %s:\n%s\n", cfg.Provider, consult.FormatDuration(elapsed), res.Text())
		return exitCode(1)
	}
	fmt.Fprintf(stdout, "consult %s --test: OK in %s (provider %s, endpoint %s)\n%s\n",
		cfg.Provider, consult.FormatDuration(elapsed), cfg.Provider, cmp.Or(cfg.BaseURL, "default"), res.Text())
	return nil
}
