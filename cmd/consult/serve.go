package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/mcpserver"
	"github.com/consultmcp/consult/internal/results"
	"github.com/consultmcp/consult/internal/tokens"
	"github.com/consultmcp/consult/providers"
	"github.com/mark3labs/mcp-go/server"
)

// newService builds the consultation service for cfg: the provider when there is a key,
// otherwise a service that explains which variable to set.
func newService(cfg config, logger *slog.Logger) (*consultation.Service, error) {
	spec, _ := providers.Lookup(cfg.provider)
	roots, err := consultation.ResolveRoots(cfg.allowRoots)
	if err != nil {
		return nil, err
	}
	var store *results.Store
	if cfg.resultsDir != "" {
		store = results.Open(cfg.resultsDir, cfg.resultsTTL, 0, 0)
		if err := store.Prune(); err != nil {
			logger.Warn("cannot tidy the results directory", "dir", cfg.resultsDir, "error", err)
		}
	} else {
		logger.Warn("no results directory (no HOME or XDG_STATE_HOME): background consultations run inside the server, end with it, and their answers are kept in memory only; set --results-dir")
	}
	jobsCfg := consultation.JobsConfig{Store: store, Limit: cfg.backgroundLimit, Logger: logger, MaxWorkers: cfg.backgroundWorkers}
	if store != nil && !cfg.inWorker {
		if jobsCfg.Launcher, err = newLauncher(cfg, store); err != nil {
			logger.Warn("background consultations run inside the server and end with it", "error", err)
		}
	}
	if cfg.inWorker {
		tokens.Preload() // a worker runs its consultation at once
	}
	svc := &consultation.Service{
		Jobs:           consultation.NewJobs(jobsCfg),
		AllowRoots:     roots,
		Counter:        tokens.NewCounter(),
		DefaultTimeout: cfg.defaultTimeout,
		DefaultModel:   cfg.model,
		Heartbeat:      cfg.heartbeat,
		IdleTimeout:    cfg.idleTimeout,
		Logger:         logger,
		KeyHint:        "the api-key argument or " + strings.Join(spec.KeyEnv, " / "),
	}
	if cfg.maxInflight > 0 { // a worker process runs one consultation: it has no bound of its own
		svc.Inflight = consultation.NewInflight(cfg.maxInflight)
		// The bound counts what calls hold at their measured peak; the collector's own
		// slack (it lets the heap grow to twice what is live) is kept within it too, unless
		// the user set GOMEMLIMIT.
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(int64(cfg.maxInflight) + runtimeOverhead)
		}
	}
	if cfg.apiKey == "" {
		svc.NoModel = fmt.Sprintf("No API key for %s: set %s (or pass the key after the provider name) and restart the server.", cfg.provider, spec.KeyEnv[0])
		logger.Warn("no API key: dry runs work, model calls will be refused", "provider", cfg.provider, "set", spec.KeyEnv[0])
		return svc, nil
	}
	p, err := spec.New(providers.Config{
		APIKey:  cfg.apiKey,
		BaseURL: cfg.baseURL,
		Logger:  logger,
	})
	if err != nil {
		return nil, err
	}
	svc.Model = p
	return svc, nil
}

// runServe serves MCP for one provider over stdio, or over streamable HTTP with --http.
func runServe(ctx context.Context, provider string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	cfg, err := parseServe(provider, args, getenv, stderr)
	if errors.Is(err, errUsage) {
		return exitCode(2)
	}
	if err != nil {
		fmt.Fprintf(stderr, "consult %s: %v\n", provider, err)
		return exitCode(2)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	slog.SetDefault(logger) // libraries that use the standard logger write to stderr too, never stdout
	if spec, _ := providers.Lookup(provider); cfg.keyOnCmdLine {
		logger.Warn("the API key was given on the command line, where other users of this machine can read it (ps, /proc); set it in the environment instead",
			"variable", strings.Join(spec.KeyEnv, " or "))
	}
	svc, err := newService(cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "consult %s: %v\n", provider, err)
		return exitCode(2)
	}
	if cfg.test {
		return runSelfTest(ctx, cfg, svc, stdout, stderr)
	}
	var tok httpToken
	if cfg.httpAddr != "" {
		if tok, err = resolveHTTPToken(cfg.httpTokenFile, cfg.httpToken); err != nil {
			fmt.Fprintf(stderr, "consult %s: %v\n", provider, err)
			return exitCode(2)
		}
	}
	s := mcpserver.New(mcpserver.Config{Service: svc, Provider: provider, Logger: logger})
	if cfg.defaultTimeout >= consult.TimeoutWarnAt {
		// Once here, not on every call that leaves the timeout to the server.
		logger.Warn("the default timeout is long enough for many MCP clients to give up on a call first (they wait about 25-60 seconds unless progress resets their clock); calls that need longer can pass on_timeout \"continue\"",
			"default_timeout", cfg.defaultTimeout)
	}
	logger.Info("consult serving", "provider", provider, "model", cfg.model, "transport", transportName(cfg),
		"default_timeout", cfg.defaultTimeout, "heartbeat", cfg.heartbeat, "idle_timeout", cfg.idleTimeout,
		"results_dir", cfg.resultsDir, "results_ttl", cfg.resultsTTL, "background_limit", cfg.backgroundLimit,
		"max_inflight", cfg.maxInflight)
	addResultResources(s, svc)
	go svc.Jobs.WatchFinished(ctx, readyPoll, func(rec results.Record) {
		announceResource(s, svc, rec)
		announceReady(s, rec)
	})
	if cfg.httpAddr != "" {
		err = serveHTTP(ctx, s, cfg, tok, logger, stderr)
	} else {
		err = mcpserver.ServeStdio(ctx, s, stdin, stdout, stderr)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			err = nil
		}
	}
	shutdownJobs(svc.Jobs, cfg.shutdownGrace)
	return err
}

// readyPoll is how often the server looks for background consultations that finished, to
// tell their session.
const readyPoll = time.Second

// announceReady sends notifications/message to the session that started rec (over stdio,
// the one client) saying that its result is ready. A session no longer connected misses it.
func announceReady(s *server.MCPServer, rec results.Record) {
	params := map[string]any{"level": "info", "logger": "consult", "data": consultation.ReadyNotice(rec)}
	if rec.Session == "" {
		s.SendNotificationToAllClients("notifications/message", params)
		return
	}
	_ = s.SendNotificationToSpecificClient(rec.Session, "notifications/message", params)
}

// shutdownJobs gives running background consultations the grace period to finish and be
// saved, then stops the rest and saves what they have. A further SIGINT or SIGTERM ends the
// grace at once.
func shutdownJobs(jobs *consultation.Jobs, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	jobs.Shutdown(ctx)
}

// sessionContext is a request's context carrying its owner (see ownerContext) and its MCP
// session (the Mcp-Session-Id header the server gave the client at initialization). Protocol
// versions without sessions send none: all their calls under one token are one session.
func sessionContext(ctx context.Context, r *http.Request) context.Context {
	return consultation.WithSession(ownerContext(ctx, r), r.Header.Get(server.HeaderKeySessionID))
}

func transportName(cfg config) string {
	if cfg.httpAddr != "" {
		return "http " + cfg.httpAddr
	}
	return "stdio"
}

// serveHTTP serves streamable HTTP at addr under /mcp until ctx ends, admitting only
// requests that carry tok (see httpGuard).
func serveHTTP(ctx context.Context, s *server.MCPServer, cfg config, tok httpToken, logger *slog.Logger, stderr io.Writer) error {
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", cfg.httpAddr, err)
	}
	httpSrv := newHTTPServer(ctx, s, newHTTPGuard(tok.value, cfg.httpAllowOrigins, loopback(cfg.httpAddr)), logger)
	endpoint := "http://" + ln.Addr().String() + "/mcp"
	logger.Info("listening", "url", endpoint)
	printHTTPAccess(stderr, endpoint, tok)
	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = httpSrv.Shutdown(shutdownCtx)
		return nil
	}
}

// newHTTPServer is the HTTP server for s: /mcp behind guard, with the header limits. Requests live in ctx: a signal cancels the calls in flight (and closes
// their upstream requests) instead of Shutdown waiting for them to finish.
func newHTTPServer(ctx context.Context, s *server.MCPServer, guard *httpGuard, logger *slog.Logger) *http.Server {
	httpSrv := &http.Server{
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	guard.boundConns(httpSrv)
	h := server.NewStreamableHTTPServer(s,
		server.WithEndpointPath("/mcp"),
		server.WithStreamableHTTPServer(httpSrv),
		server.WithStreamableHTTPLogger(logger),
		server.WithHTTPContextFunc(sessionContext),
		server.WithSessionIdManager(guard.sessionManager()),
	)
	mux := http.NewServeMux()
	guard.next = mcpserver.HTTPShim(h)
	mux.Handle("/mcp", guard)
	mux.HandleFunc("/", oauthRefusal)
	httpSrv.Handler = mux
	return httpSrv
}

// runtimeOverhead is what the server holds besides its calls: the vocabulary (about 10 MB),
// the token cache (about 3 MB), the binary's data and the runtime's own structures, with room.
const runtimeOverhead = 128 << 20
