package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	consult "github.com/consultmcp/consult"
	"github.com/consultmcp/consult/consultation"
	"github.com/consultmcp/consult/internal/core/catalog"
	"github.com/consultmcp/consult/internal/edge/mcpserver"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
	"github.com/consultmcp/consult/internal/leaf/tokens"
	"github.com/consultmcp/consult/providers"
	"github.com/mark3labs/mcp-go/server"
)

// serving is what serving (or a worker) runs on: the consultation service and, when there
// is a results directory, the background engine and its store.
type serving struct {
	svc    *consultation.Service
	engine *background.Engine // nil: no results directory, no background consultations
	store  *results.Store
}

// newServer builds what a server runs on: the service (newService) bounded by the bytes in
// flight, and, when the results directory can be used, the background engine that starts
// workers. A directory that cannot be used is said once, and a budget that needs it is kept
// (every model call is then refused, saying why), never dropped.
func newServer(cfg config, logger *slog.Logger) (*serving, error) {
	store := results.Open(cfg.ResultsDir, cfg.ResultsTTL, 0, 0)
	if cfg.ResultsDir != "" {
		if err := store.Check(); err != nil {
			logger.Warn("the results directory cannot be used: on_timeout \"continue\" is refused until it is fixed", "error", err)
			if cfg.BudgetUSD > 0 {
				logger.Error("--budget-usd is set, but its spend ledger in the results directory cannot be used: every model call is refused until it is fixed", "error", err)
			}
			store = nil
		} else if err := store.Prune(); err != nil {
			logger.Warn("cannot tidy the results directory", "dir", cfg.ResultsDir, "error", err)
		}
	} else {
		store = nil
		logger.Warn("no results directory (no HOME or XDG_STATE_HOME): on_timeout \"continue\" is refused; set --results-dir")
	}
	srv, err := newService(cfg, store, cfg.Heartbeat, logger)
	if err != nil {
		return nil, err
	}
	if store == nil && cfg.BudgetUSD > 0 && cfg.ResultsDir != "" {
		// The budget is kept, never dropped: its ledger's every use fails with the reason.
		srv.svc.Ledger, srv.svc.DailyBudgetUSD = results.Open(cfg.ResultsDir, cfg.ResultsTTL, 0, 0), cfg.BudgetUSD
	}
	if cfg.MaxInflight > 0 {
		srv.svc.Inflight = consultation.NewInflight(cfg.MaxInflight)
		// The bound counts what calls hold at their measured peak; the collector's own
		// slack (it lets the heap grow to twice what is live) is kept within it too, unless
		// the user set GOMEMLIMIT.
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(int64(cfg.MaxInflight) + runtimeOverhead)
		}
	}
	if store != nil {
		run, err := newRunner(cfg, store)
		if err != nil {
			return nil, err
		}
		srv.engine = newEngine(cfg, srv.svc, store, run, logger)
	}
	return srv, nil
}

// newWorker builds what a background worker runs on, from its server's configuration: the
// same service, writing its record at the worker's heartbeat, with the engine that runs its
// one consultation (it starts no workers and has no bound on bytes in flight of its own).
func newWorker(cfg config, logger *slog.Logger) (*serving, error) {
	tokens.Preload() // a worker runs its consultation at once
	store := results.Open(cfg.ResultsDir, cfg.ResultsTTL, 0, 0)
	srv, err := newService(cfg, store, background.WorkerHeartbeat(cfg.Heartbeat), logger)
	if err != nil {
		return nil, err
	}
	srv.engine = newEngine(cfg, srv.svc, store, nil, logger)
	return srv, nil
}

// newEngine is the background engine over store for svc; run starts workers (nil: none).
func newEngine(cfg config, svc *consultation.Service, store *results.Store, run background.Runner, logger *slog.Logger) *background.Engine {
	return background.New(background.Config{Service: svc, Store: store, Run: run, Limit: cfg.BackgroundLimit,
		MaxWorkers: cfg.BackgroundWorkers, Heartbeat: cfg.Heartbeat, Logger: logger})
}

// newService builds the consultation service for cfg, the same for a server and its workers:
// the confinement, the catalog of prices and windows, the ledger in store (nil: none), and
// the provider when there is a key, otherwise a service that explains which variable to set.
func newService(cfg config, store *results.Store, heartbeat time.Duration, logger *slog.Logger) (*serving, error) {
	spec, _ := providers.Lookup(cfg.Provider)
	roots, err := consultation.ResolveRoots(cfg.AllowRoots)
	if err != nil {
		return nil, err
	}
	svc := &consultation.Service{
		AllowRoots:     roots,
		Counter:        tokens.NewCounter(),
		DefaultTimeout: cfg.DefaultTimeout,
		DefaultModel:   cfg.Model,
		Heartbeat:      heartbeat,
		IdleTimeout:    cfg.IdleTimeout,
		Logger:         logger,
		KeyHint:        "the api-key argument or " + strings.Join(spec.KeyEnv, " / "),
		LongCache:      cfg.LongCache,
	}
	if store != nil {
		// Every consultation's cost is recorded, in the server and its workers alike, so the
		// daily budget and `consult results` see all of it.
		svc.Ledger, svc.DailyBudgetUSD = store, cfg.BudgetUSD
	}
	if svc.Catalog, err = newCatalog(cfg, store, logger); err != nil {
		return nil, err
	}
	srv := &serving{svc: svc, store: store}
	if cfg.APIKey == "" {
		svc.NoModel = fmt.Sprintf("No API key for %s: set %s (or pass the key after the provider name) and restart the server.", cfg.Provider, spec.KeyEnv[0])
		logger.Warn("no API key: dry runs work, model calls will be refused", "provider", cfg.Provider, "set", spec.KeyEnv[0])
		return srv, nil
	}
	if svc.Model, err = spec.New(providers.Config{APIKey: cfg.APIKey, BaseURL: cfg.BaseURL, Logger: logger, ZDR: cfg.ZDR}); err != nil {
		return nil, err
	}
	return srv, nil
}

// newCatalog is the catalog of prices and windows for cfg: the user's prices file, the model
// list (cached in the results directory when there is one, store; nil otherwise), and the
// fallback table. The list is OpenRouter's public one (it lists the openai/* and google/*
// models too), fetched from the provider's endpoint for OpenRouter (with its key, so a
// proxy in front of it serves it too); with another provider's own --base-url, consult
// talks to no other host unless --models-url names one.
func newCatalog(cfg config, store *results.Store, logger *slog.Logger) (*catalog.Catalog, error) {
	cc := catalog.Config{Provider: cfg.Provider, Logger: logger}
	switch spec, _ := providers.Lookup(cfg.Provider); {
	case cfg.ModelsURL == "off":
	case cfg.ModelsURL != "":
		cc.ListURL = cfg.ModelsURL
	case cfg.Provider == providers.NameOpenRouter:
		cc.ListURL = strings.TrimRight(cmp.Or(cfg.BaseURL, spec.DefaultBaseURL), "/") + "/models"
		cc.APIKey = cfg.APIKey
	case cfg.BaseURL == "":
		cc.ListURL = catalog.DefaultListURL
	default:
		cc.Unlisted = "its calls go to --base-url " + cfg.BaseURL + ", whose models no list consult reads names (give --models-url or a prices file to price them)"
	}
	if store != nil {
		cc.Cache = store
	}
	if cfg.Prices != "" {
		pf, err := catalog.LoadPrices(cfg.Prices)
		if err != nil {
			return nil, fmt.Errorf("--prices: %w", err)
		}
		cc.Prices = pf
	}
	return catalog.New(cc), nil
}

// runServe serves MCP for one provider over stdio, or over streamable HTTP with --http.
func runServe(ctx context.Context, provider string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fail := func(err error) error { // a mistake in the configuration: exit status 2
		if !errors.Is(err, errUsage) { // the flag package has said what it is
			fmt.Fprintf(stderr, "consult %s: %v\n", provider, err)
		}
		return exitCode(2)
	}
	cfg, err := parseServe(provider, args, getenv, stderr)
	var help helpRequest
	if errors.As(err, &help) {
		return showHelp(help.fs, serveHelp(provider), stdout)
	}
	if err != nil {
		return fail(err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	slog.SetDefault(logger) // libraries that use the standard logger write to stderr too, never stdout
	if spec, _ := providers.Lookup(provider); cfg.KeyOnCmdLine {
		logger.Warn("the API key was given on the command line, where other users of this machine can read it (ps, /proc); set it in the environment instead",
			"variable", strings.Join(spec.KeyEnv, " or "))
	}
	srv, err := newServer(cfg, logger)
	if err != nil {
		return fail(err)
	}
	if cfg.Test {
		return runSelfTest(ctx, cfg, srv.svc, stdout, stderr)
	}
	var tok httpToken
	if cfg.HTTPAddr != "" {
		if tok, err = resolveHTTPToken(cfg.HTTPTokenFile, cfg.HTTPToken); err != nil {
			return fail(err)
		}
	}
	page := cfg.PageBytes
	if page == 0 {
		page = -1 // never paged
	}
	s := mcpserver.New(mcpserver.Config{Service: srv.svc, Background: srv.engine, PageBytes: page, Provider: provider, Logger: logger})
	if cfg.DefaultTimeout >= consult.TimeoutWarnAt {
		// Once here, not on every call that leaves the timeout to the server.
		logger.Warn("the default timeout is long enough for many MCP clients to give up on a call first (they wait about 25-60 seconds unless progress resets their clock); calls that need longer can pass on_timeout \"continue\"",
			"default_timeout", cfg.DefaultTimeout)
	}
	transport := "stdio"
	if cfg.HTTPAddr != "" {
		transport = "http " + cfg.HTTPAddr
	}
	logger.Info("consult serving", "provider", provider, "model", cfg.Model, "transport", transport,
		"default_timeout", cfg.DefaultTimeout, "heartbeat", cfg.Heartbeat, "idle_timeout", cfg.IdleTimeout,
		"results_dir", cfg.ResultsDir, "results_ttl", cfg.ResultsTTL, "background_limit", cfg.BackgroundLimit,
		"max_inflight", cfg.MaxInflight, "zdr", cfg.ZDR)
	if srv.engine != nil {
		addResultResources(s, srv.engine)
		ctx = mcpserver.WithResourceLookup(ctx, resultLookup(srv.engine))
		go srv.engine.WatchFinished(ctx, readyPoll, func(rec results.Record) { announce(s, srv.engine, rec) })
		go pruneEvery(ctx, srv.store, pruneInterval, logger)
	}
	if cfg.HTTPAddr != "" {
		err = serveHTTP(ctx, s, cfg, tok, logger, stderr)
	} else {
		if isTerminal(stdin) {
			fmt.Fprint(stderr, waitingLine)
		}
		err = mcpserver.ServeStdio(ctx, s, stdin, stdout, stderr)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			err = nil
		}
	}
	return err
}

// readyPoll is how often the server looks for background consultations that finished, to
// tell their session.
const readyPoll = time.Second

// pruneInterval is how often a server prunes the results directory (expired results, files
// left by crashes), besides at start and at the saves that add or finish a record.
const pruneInterval = 10 * time.Minute

// pruneEvery prunes store every interval until ctx ends.
func pruneEvery(ctx context.Context, store *results.Store, interval time.Duration, logger *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := store.Prune(); err != nil {
				logger.Warn("cannot tidy the results directory", "dir", store.Dir(), "error", err)
			}
		}
	}
}

// sessionContext is the streamable HTTP server's context function: the context tool
// handlers get carries the request's owner (which the guard put in the request's context)
// and its MCP session (the Mcp-Session-Id header the server gave the client at
// initialization). Protocol versions without sessions send none: all their calls under one
// token are one session.
func sessionContext(ctx context.Context, r *http.Request) context.Context {
	ctx = background.WithOwner(ctx, background.OwnerFrom(r.Context()))
	return background.WithSession(ctx, r.Header.Get(server.HeaderKeySessionID))
}

// serveHTTP serves streamable HTTP at addr under /mcp until ctx ends, admitting only
// requests that carry tok (see httpGuard).
func serveHTTP(ctx context.Context, s *server.MCPServer, cfg config, tok httpToken, logger *slog.Logger, stderr io.Writer) error {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", cfg.HTTPAddr, err)
	}
	httpSrv := newHTTPServer(ctx, s, newHTTPGuard(tok.value, cfg.HTTPAllowOrigins, loopback(cfg.HTTPAddr)), logger)
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
