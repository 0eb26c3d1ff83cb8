package main

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/internal/edge/mcpserver"
	"github.com/consultmcp/consult/internal/engine/background"
	"github.com/consultmcp/consult/internal/engine/results"
)

// resultsURI prefixes the resource of each background consultation's result:
// consult://results/{id}.
const resultsURI = "consult://results/"

// addResultResources serves consult://results/{id}: reading one returns the result of the
// caller's consultation with that id (the answer or failure once done, its progress while
// it runs); another owner's id reads as unknown.
func addResultResources(s *server.MCPServer, eng *background.Engine) {
	tmpl := mcp.NewResourceTemplate(resultsURI+"{id}", "Background consultation result",
		mcp.WithTemplateDescription(`The result of a consultation started with on_timeout "continue": its answer once done, its progress while it runs.`),
		mcp.WithTemplateMIMEType("text/plain"))
	s.AddResourceTemplate(tmpl, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		id, ok := strings.CutPrefix(req.Params.URI, resultsURI)
		if !ok {
			return nil, errors.New("not a consult result: " + req.Params.URI)
		}
		return readResult(ctx, eng, req.Params.URI, id)
	})
}

// resultLookup says, for the layer in front of mcp-go (mcpserver.WithResourceLookup),
// whether the caller may read a resource: consult serves only consult://results/{id}, and
// of those only the caller's, known and not expired.
func resultLookup(eng *background.Engine) mcpserver.ResourceLookup {
	return func(ctx context.Context, uri string) (bool, string) {
		id, ok := strings.CutPrefix(uri, resultsURI)
		if !ok {
			return false, "consult serves only " + resultsURI + "{id}, the results of consultations"
		}
		res, found := eng.Find(ctx, id)
		if found {
			return true, ""
		}
		return false, res.Text()
	}
}

// readResult is the content of the resource uri: consultation id's result as its caller's
// owner sees it.
func readResult(ctx context.Context, eng *background.Engine, uri, id string) ([]mcp.ResourceContents, error) {
	res, found := eng.Peek(ctx, id)
	if !found {
		return nil, errors.New(res.Text())
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: res.Text()}}, nil
}

// announce tells the session that started a finished consultation (over stdio, the one
// client) that its result is ready: it lists the result as a resource of that session, then
// sends a notifications/message. A session no longer connected misses it. No
// notifications/resources/updated is sent: the server does not offer resources/subscribe,
// and a client receives that notification only for a resource it subscribed to.
func announce(s *server.MCPServer, eng *background.Engine, rec results.Record) {
	uri := resultsURI + rec.ID
	res := mcp.NewResource(uri, "consultation "+rec.ID, mcp.WithResourceDescription(rec.Query), mcp.WithMIMEType("text/plain"))
	read := func(ctx context.Context, _ mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return readResult(ctx, eng, uri, rec.ID)
	}
	params := map[string]any{"level": "info", "logger": "consult", "data": background.ReadyNotice(rec)}
	if rec.Session == "" {
		s.AddResource(res, read)
		s.SendNotificationToAllClients("notifications/message", params)
	} else {
		_ = s.AddSessionResource(rec.Session, res, read)
		_ = s.SendNotificationToSpecificClient(rec.Session, "notifications/message", params)
	}
}
