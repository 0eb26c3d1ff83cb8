package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"

	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/providers"
)

// A background consultation (on_timeout "continue") runs in a worker: this binary started
// again as `consult __worker`, in a session and process group of its own, with stderr on a
// log file beside its record. The worker's orders come on its standard input, a pipe only
// the server holds: the server's whole configuration (the API key included, which is thus
// in no argument, environment or file) and the job. It inherits, as descriptors 3, 4 and 5,
// the pipe it writes its result to, its record's lock and its worker slot.
const workerCommand = "__worker"

// workerOrders is what a worker reads on its standard input.
type workerOrders struct {
	Config config         `json:"config"`
	Job    background.Job `json:"job"`
}

// ownProgram names the running program's own file on Linux, even after it was removed or
// replaced.
const ownProgram = "/proc/self/exe"

// maxOrders bounds the orders a worker reads: a request is small (its query at most
// consultation.MaxQueryBytes).
const maxOrders = 8 << 20

// newRunner starts workers for the server configured by cfg.
func newRunner(cfg config, store *results.Store) (background.Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this program to start background workers: %w", err)
	}
	return func(job background.Job, held []*os.File, out *os.File) error {
		defer func() { // the worker has its own copies now, or failed to start
			out.Close()
			for _, f := range held {
				f.Close()
			}
		}()
		orders, err := json.Marshal(workerOrders{Config: cfg, Job: job})
		if err != nil {
			return err
		}
		logf, err := store.CreateLog(job.ID)
		if err != nil {
			return err
		}
		defer logf.Close()
		in, feed, err := os.Pipe()
		if err != nil {
			return err
		}
		defer in.Close()
		cmd := exec.Command(exe, workerCommand)
		if _, err := os.Stat(ownProgram); err == nil {
			// The worker runs this very program even when its file was replaced since the
			// server started (an upgrade): the two must speak one version of the orders and
			// the records. Its name in a process list stays exe.
			cmd.Path = ownProgram
		}
		cmd.Stdin = in
		cmd.Stderr = logf // stdout: /dev/null
		cmd.ExtraFiles = append([]*os.File{out}, held...)
		cmd.SysProcAttr = detachedAttr()
		if err := cmd.Start(); err != nil {
			feed.Close()
			_ = store.RemoveLog(job.ID)
			return err
		}
		go cmd.Wait() // reap it, so it does not linger as a zombie
		_, err = feed.Write(orders)
		feed.Close()
		return err
	}, nil
}

// runWorker is `consult __worker`: read the orders on stdin, run one background
// consultation and save its result.
func runWorker(ctx context.Context, stdin io.Reader, stderr io.Writer) error {
	var o workerOrders
	if err := json.NewDecoder(io.LimitReader(stdin, maxOrders)).Decode(&o); err != nil {
		fmt.Fprintln(stderr, "consult __worker: internal command, started by the server with its orders on standard input:", err)
		return exitCode(2)
	}
	out, lock, slot := os.NewFile(3, "result"), os.NewFile(4, "lock"), os.NewFile(5, "slot")
	if out == nil || lock == nil || slot == nil {
		return fmt.Errorf("consult __worker: started without its descriptors")
	}
	cfg := o.Config
	if _, ok := providers.Lookup(cfg.Provider); !ok {
		return fmt.Errorf("consult __worker: unknown provider %q", cfg.Provider)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})).With("worker", o.Job.ID)
	slog.SetDefault(logger)
	srv, err := newWorker(cfg, logger)
	if err != nil {
		return err
	}
	// Signals do not stop a worker: it is detached so that the server's end, and its
	// client's, do not reach it. A cancel comes as a marker beside its record.
	if err := srv.engine.Work(ctx, o.Job, []*os.File{lock, slot}, out); err != nil {
		return err
	}
	_ = srv.store.RemoveLog(o.Job.ID) // finished and saved: only the record stays
	return nil
}
