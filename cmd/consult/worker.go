package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/results"
)

// A background consultation (on_timeout "continue") runs in a worker: this binary started
// again as `consult __worker JOBFILE`, in a session and process group of its own, with
// stdin and stdout on /dev/null and stderr on a log file beside its record. The job file
// (written atomically, mode 0600, in the results directory) says what to run; the API key
// comes through the environment, never the command line.
const (
	// workerCommand is the hidden subcommand a worker runs.
	workerCommand = "__worker"
	// workerKeyEnv carries the provider's API key to a worker.
	workerKeyEnv = "CONSULT_WORKER_API_KEY"
)

// workerSpec is a job file: the consultation and the server settings it runs with.
type workerSpec struct {
	Job             consultation.WorkerJob `json:"job"`
	Provider        string                 `json:"provider"`
	BaseURL         string                 `json:"base_url,omitempty"`
	Model           string                 `json:"model,omitempty"`
	Heartbeat       time.Duration          `json:"heartbeat"`
	IdleTimeout     time.Duration          `json:"idle_timeout,omitempty"`
	ResultsDir      string                 `json:"results_dir"`
	ResultsTTL      time.Duration          `json:"results_ttl"`
	BackgroundLimit time.Duration          `json:"background_limit"`
	LogLevel        string                 `json:"log_level"`
}

// newLauncher starts workers for the server configured by cfg, saving to store.
func newLauncher(cfg config, store *results.Store) (consultation.Launcher, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this program to start background workers: %w", err)
	}
	return func(job consultation.WorkerJob) (int, error) {
		data, err := json.Marshal(workerSpec{
			Job: job, Provider: cfg.provider, BaseURL: cfg.baseURL, Model: cfg.model, Heartbeat: cfg.heartbeat,
			IdleTimeout: cfg.idleTimeout, ResultsDir: store.Dir(), ResultsTTL: store.TTL(), BackgroundLimit: cfg.backgroundLimit,
			LogLevel: cfg.logLevel.String(),
		})
		if err != nil {
			return 0, err
		}
		path, err := store.WriteJob(job.ID, data)
		if err != nil {
			return 0, err
		}
		logf, err := os.OpenFile(store.LogPath(job.ID), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			_ = os.Remove(path)
			return 0, err
		}
		defer logf.Close()
		cmd := exec.Command(exe, workerCommand, path)
		cmd.Env = append(workerEnv(os.Environ()), workerKeyEnv+"="+cfg.apiKey)
		cmd.Stderr = logf // stdin and stdout: /dev/null
		cmd.SysProcAttr = detachedAttr()
		if err := cmd.Start(); err != nil {
			_ = os.Remove(path)
			_ = os.Remove(store.LogPath(job.ID))
			return 0, err
		}
		go cmd.Wait() // reap it, so it does not linger as a zombie that looks alive
		return cmd.Process.Pid, nil
	}, nil
}

// workerEnv is the server's environment for a worker, without any key variable of a
// worker (the launcher adds the one it means).
func workerEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, workerKeyEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// runWorker is `consult __worker JOBFILE`: run one background consultation and save its
// result. SIGTERM (consultation_cancel) or SIGINT (the user stopped the call that started
// it) stops it and saves what it had.
func runWorker(_ context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "consult __worker: internal command, started by the server with a job file")
		return exitCode(2)
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var spec workerSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("job file %s: %w", args[0], err)
	}
	if !knownProvider(spec.Provider) {
		return fmt.Errorf("job file %s: unknown provider %q", args[0], spec.Provider)
	}
	cfg := config{
		provider: spec.Provider, apiKey: getenv(workerKeyEnv), baseURL: spec.BaseURL, model: spec.Model,
		heartbeat: spec.Heartbeat, idleTimeout: spec.IdleTimeout, resultsDir: spec.ResultsDir,
		resultsTTL: spec.ResultsTTL, backgroundLimit: spec.BackgroundLimit, inWorker: true,
	}
	_ = cfg.logLevel.UnmarshalText([]byte(spec.LogLevel))
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel})).With("worker", spec.Job.ID)
	slog.SetDefault(logger)
	svc, err := newService(cfg, logger)
	if err != nil {
		return err
	}
	// The server's signal says why (see consultation.stopProcess); ctx, which any of them
	// ends, is not used, so the cause is the signal's.
	wctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGINT {
				cancel(consultation.ErrUserCancelled)
			} else {
				cancel(consultation.ErrCancelledByTool)
			}
		case <-wctx.Done():
		}
	}()
	if err := svc.RunWorker(wctx, spec.Job); err != nil {
		return err
	}
	if st := svc.Jobs.Store(); st != nil {
		_ = os.Remove(st.LogPath(spec.Job.ID)) // finished and saved: only the record stays
	}
	return nil
}
