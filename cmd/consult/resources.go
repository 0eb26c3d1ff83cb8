package main

import (
	"context"
	"errors"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/consultmcp/consult/internal/background"
	"github.com/consultmcp/consult/internal/results"
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
		res, found := eng.Peek(ctx, id)
		if !found {
			return nil, errors.New(res.Text())
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: res.Text()}}, nil
	})
}

// announceResource lists a finished consultation's result as a resource of the session
// that started it (over stdio, of the server) and tells that session it was updated.
func announceResource(s *server.MCPServer, eng *background.Engine, rec results.Record) {
	uri := resultsURI + rec.ID
	res := mcp.NewResource(uri, "consultation "+rec.ID, mcp.WithResourceDescription(rec.Query), mcp.WithMIMEType("text/plain"))
	read := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		out, found := eng.Peek(ctx, rec.ID)
		if !found {
			return nil, errors.New(out.Text())
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: out.Text()}}, nil
	}
	params := map[string]any{"uri": uri}
	if rec.Session == "" {
		s.AddResource(res, read)
		s.SendNotificationToAllClients("notifications/resources/updated", params)
		return
	}
	_ = s.AddSessionResource(rec.Session, res, read)
	_ = s.SendNotificationToSpecificClient(rec.Session, "notifications/resources/updated", params)
}
