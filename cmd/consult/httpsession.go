package main

import (
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// maxEndedSessions is how many ended session ids are remembered. An id is a random UUID, so
// remembering it costs about 100 bytes; past the cap the oldest is forgotten (and works again
// as a session without state, as every unknown well-formed id does).
const maxEndedSessions = 10000

// sessionIDs is the streamable HTTP server's session id manager. It makes and checks ids as
// mcp-go's default does (a prefix and a random UUID, any well-formed id accepted: a client
// keeps its session across a restart of the server), and refuses an id whose session the
// client ended with DELETE: mcp-go then answers a POST with 404, as the MCP specification
// requires for a terminated session. mcp-go does not check the id of a GET (it opens a
// stream for any id), so the guard asks ended before it passes any request on.
type sessionIDs struct {
	server.StatelessGeneratingSessionIdManager
	mu    sync.Mutex
	ended map[string]bool
	order []string // ended ids, oldest first
}

// Validate refuses a malformed id (err) and reports an ended one as terminated.
func (s *sessionIDs) Validate(id string) (isTerminated bool, err error) {
	if _, err := s.StatelessGeneratingSessionIdManager.Validate(id); err != nil {
		return false, err
	}
	return s.isEnded(id), nil
}

// isEnded reports whether id names a session ended by DELETE.
func (s *sessionIDs) isEnded(id string) bool {
	if s == nil || id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended[id]
}

// sessionManager returns the session id manager for the server behind g, and makes g refuse
// requests in the sessions it ends.
func (g *httpGuard) sessionManager() server.SessionIdManager {
	g.sessions = &sessionIDs{ended: make(map[string]bool)}
	return g.sessions
}

// endedSessionMessage is the body of a 404 for a request in an ended session.
const endedSessionMessage = "consult: this MCP session was ended (DELETE); start a new one with initialize"

// Terminate remembers id as ended. A malformed id names no session: there is nothing to
// end, and nothing to remember (mcp-go would answer an error here with 500).
func (s *sessionIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if _, err := s.StatelessGeneratingSessionIdManager.Validate(id); err != nil {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended[id] {
		return false, nil
	}
	if len(s.order) >= maxEndedSessions {
		delete(s.ended, s.order[0])
		s.order = s.order[1:]
	}
	s.ended[id] = true
	s.order = append(s.order, id)
	return false, nil
}
