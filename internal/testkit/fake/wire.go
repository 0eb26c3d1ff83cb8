package fake

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// stream writes one scripted response in a flavor's SSE format.
type stream struct {
	s       *Server
	w       http.ResponseWriter
	ctx     context.Context
	sc      Script
	model   string
	id      string
	created int64
	started bool // role sent (OpenAI flavors)
	answer  int  // runes of answer sent
	thought int  // runes of reasoning sent
	prompt  int  // bytes of request body
	broken  bool // a write failed or came after the client went away
}

// generate serves a chat-completions or streamGenerateContent request.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, req *Request) {
	sc := s.nextScript(req)
	ctx := r.Context()
	if !s.sleep(ctx, sc.HeaderDelay, nil, nil) {
		return
	}
	if sc.Status >= 400 {
		s.writeError(w, sc)
		return
	}
	for k, v := range sc.Header {
		w.Header().Set(k, v)
	}
	st := &stream{
		s: s, w: w, ctx: ctx, sc: sc, model: cmp.Or(sc.Model, req.Model),
		id: fmt.Sprintf("gen-fake-%d", req.Seq), created: req.Arrived.Unix(), prompt: len(req.Body),
	}
	w.Header().Set("Content-Type", s.contentType(sc, "text/event-stream", "text/event-stream; charset=utf-8"))
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(cmp.Or(sc.Status, http.StatusOK))
	st.flush()
	if sc.Body != "" {
		st.write(sc.Body)
		req.setComplete(!st.broken)
		return
	}
	for _, step := range sc.Steps {
		if !st.step(step) {
			return
		}
	}
	if !sc.NoFinish {
		st.finish()
	}
	req.setComplete(!st.broken)
}

// sleep waits d (sending keep-alive comments through st when given), or until until is
// closed (nil: never), the client goes away or the server closes. It reports whether the
// wait completed.
func (s *Server) sleep(ctx context.Context, d time.Duration, until <-chan struct{}, st *stream) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	var tick <-chan time.Time
	if st != nil && st.sc.KeepAlive > 0 {
		t := time.NewTicker(st.sc.KeepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-s.quit:
			return false
		case <-timer.C:
			return true
		case <-until: // a nil channel: never
			return true
		case <-tick:
			if !st.comment(st.keepAliveText()) {
				return false
			}
		}
	}
}

func (st *stream) keepAliveText() string {
	if st.s.Flavor == OpenRouter {
		return "OPENROUTER PROCESSING"
	}
	return "keep-alive"
}

func (st *stream) flush() {
	if f, ok := st.w.(http.Flusher); ok {
		f.Flush()
	}
}

// write sends s and flushes; it reports whether the client is still there.
func (st *stream) write(s string) bool {
	if st.ctx.Err() != nil {
		st.broken = true
		return false
	}
	if _, err := st.w.Write([]byte(s)); err != nil {
		st.broken = true
		return false
	}
	st.flush()
	return true
}

func (st *stream) eol() string {
	if st.s.Flavor == Gemini {
		return "\r\n\r\n"
	}
	return "\n\n"
}

func (st *stream) data(v any) bool {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return st.write("data: " + string(b) + st.eol())
}

func (st *stream) comment(text string) bool { return st.write(": " + text + st.eol()) }

func (st *stream) step(step Step) bool {
	switch step.kind {
	case stepText:
		st.answer += utf8.RuneCountInString(step.text)
		return st.text(step.text, false)
	case stepThink:
		st.thought += utf8.RuneCountInString(step.text)
		if st.s.Flavor == OpenAI {
			return true // OpenAI streams nothing while it reasons
		}
		return st.text(step.text, true)
	case stepSleep:
		return st.s.sleep(st.ctx, step.d, step.until, st)
	case stepComment:
		return st.comment(step.text)
	case stepRaw:
		return st.write(step.text)
	case stepFail:
		st.fail(step.code, step.text)
		return false
	case stepStop:
		return st.stop(step.text)
	case stepRefuse:
		if st.s.Flavor == Gemini {
			return true
		}
		return st.delta(map[string]any{"content": nil, "refusal": step.text})
	case stepReset:
		st.reset()
		return false
	}
	return true
}

// chunk is an OpenAI-style chat.completion.chunk. extra adds top-level fields; OpenRouter's
// choices also carry native_finish_reason, the upstream model's own reason
// (openrouter.ai/docs/api-reference/overview, "native_finish_reason").
func (st *stream) chunk(delta map[string]any, finish any, extra map[string]any) map[string]any {
	choice := map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}
	c := map[string]any{
		"id":      st.id,
		"object":  "chat.completion.chunk",
		"created": st.created,
		"model":   st.model,
		"choices": []any{choice},
	}
	if st.s.Flavor == OpenRouter {
		c["provider"] = "FakeProvider"
		choice["native_finish_reason"] = finish
	} else {
		c["system_fingerprint"] = "fp_fake"
		c["service_tier"] = "default"
	}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

func (st *stream) text(s string, thought bool) bool {
	if st.s.Flavor == Gemini {
		part := map[string]any{"text": s}
		if thought {
			part["thought"] = true
		}
		return st.data(st.geminiChunk([]any{part}, "", st.geminiUsage(false)))
	}
	delta := map[string]any{"content": s}
	if thought {
		delta = map[string]any{
			"content":   "",
			"reasoning": s,
			"reasoning_details": []any{map[string]any{
				"type": "reasoning.text", "text": s, "format": "unknown", "index": 0,
			}},
		}
	}
	return st.delta(delta)
}

// delta sends a chat chunk with this delta, the first one with the assistant's role.
func (st *stream) delta(delta map[string]any) bool {
	if !st.started {
		delta["role"] = "assistant"
		st.started = true
	}
	return st.data(st.chunk(delta, nil, nil))
}

func (st *stream) usage() Usage {
	if st.sc.Usage != nil {
		return *st.sc.Usage
	}
	u := Usage{Input: st.prompt / 4, Output: (st.answer + 3) / 4, Reasoning: (st.thought + 3) / 4}
	if st.s.Flavor == OpenRouter {
		u.Cost = float64(u.Input+u.Output+u.Reasoning) * 1e-6
	}
	return u
}

func (st *stream) finish() {
	u := st.usage()
	if st.s.Flavor == Gemini {
		st.data(st.geminiChunk([]any{map[string]any{"text": ""}}, cmp.Or(st.sc.Finish, "STOP"), st.geminiUsage(true)))
		return
	}
	if !st.data(st.chunk(map[string]any{}, cmp.Or(st.sc.Finish, "stop"), nil)) {
		return
	}
	if !st.sc.NoUsage && !st.data(st.usageChunk(u)) {
		return
	}
	st.write("data: [DONE]" + st.eol())
}

// usageChunk is the last chunk of a chat stream: no choices, the usage.
func (st *stream) usageChunk(u Usage) map[string]any {
	usage := map[string]any{
		"prompt_tokens":             u.Input,
		"completion_tokens":         u.Output + u.Reasoning,
		"total_tokens":              u.Input + u.Output + u.Reasoning,
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.Cached, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
	if st.s.Flavor == OpenRouter {
		usage["cost"] = u.Cost
		usage["is_byok"] = false
	}
	c := st.chunk(nil, nil, map[string]any{"usage": usage})
	c["choices"] = []any{}
	return c
}

// stop sends a chunk with a finish reason and no text, in the middle of the stream.
func (st *stream) stop(reason string) bool {
	if st.s.Flavor == Gemini {
		return st.data(st.geminiChunk([]any{map[string]any{"text": ""}}, reason, st.geminiUsage(false)))
	}
	return st.data(st.chunk(map[string]any{"content": ""}, reason, nil))
}

func (st *stream) geminiUsage(final bool) map[string]any {
	u := st.usage()
	m := map[string]any{
		"promptTokenCount":    u.Input,
		"totalTokenCount":     u.Input,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": u.Input}},
	}
	if final {
		m["candidatesTokenCount"] = u.Output
		m["totalTokenCount"] = u.Input + u.Output + u.Reasoning
		if u.Reasoning > 0 {
			m["thoughtsTokenCount"] = u.Reasoning
		}
		if u.Cached > 0 {
			m["cachedContentTokenCount"] = u.Cached
		}
	}
	return m
}

func (st *stream) geminiChunk(parts []any, finish string, usage map[string]any) map[string]any {
	cand := map[string]any{
		"content": map[string]any{"parts": parts, "role": "model"},
		"index":   0,
	}
	if finish != "" {
		cand["finishReason"] = finish
	}
	return map[string]any{
		"candidates":    []any{cand},
		"usageMetadata": usage,
		"modelVersion":  st.model,
		"responseId":    st.id,
	}
}

// fail sends an in-band error event and ends the stream.
func (st *stream) fail(code int, message string) {
	switch st.s.Flavor {
	case Gemini:
		st.data(map[string]any{"error": map[string]any{
			"code": code, "message": message, "status": googleStatus(code),
		}})
	case OpenRouter:
		st.data(st.chunk(map[string]any{"content": ""}, "error", map[string]any{
			"error": map[string]any{"code": code, "message": message},
		}))
	default:
		st.data(map[string]any{"error": map[string]any{
			"message": message, "type": "server_error", "param": nil, "code": code,
		}})
	}
}

// reset aborts the connection with a TCP RST.
func (st *stream) reset() {
	hj, ok := st.w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// writeError sends the flavor's error body for sc.Status.
func (s *Server) writeError(w http.ResponseWriter, sc Script) {
	for k, v := range sc.Header {
		w.Header().Set(k, v)
	}
	body := sc.Body
	if body == "" {
		body = s.errorBody(sc)
	}
	w.Header().Set("Content-Type", s.contentType(sc, "application/json", "application/json; charset=UTF-8"))
	w.WriteHeader(sc.Status)
	_, _ = w.Write([]byte(body))
}

// contentType is sc's ContentType if it sets one, else the flavor's: plain, or gemini as
// Gemini's servers spell it.
func (s *Server) contentType(sc Script, plain, gemini string) string {
	switch {
	case sc.ContentType != "":
		return sc.ContentType
	case s.Flavor == Gemini:
		return gemini
	}
	return plain
}

func (s *Server) errorBody(sc Script) string {
	status := sc.Status
	msg := cmp.Or(sc.ErrorMessage, defaultMessage(s.Flavor, status))
	var v any
	switch s.Flavor {
	case Gemini:
		e := map[string]any{"code": status, "message": msg, "status": cmp.Or(sc.ErrorCode, googleStatus(status))}
		var details []any
		if status == http.StatusBadRequest && strings.Contains(msg, "API key not valid") {
			details = append(details, map[string]any{
				"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
				"domain": "googleapis.com",
			})
		}
		if sc.QuotaID != "" {
			v := map[string]any{
				"quotaMetric":     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":         sc.QuotaID,
				"quotaDimensions": map[string]any{"model": cmp.Or(sc.Model, "gemini-2.5-pro"), "location": "global"},
			}
			if sc.QuotaValue != "" {
				v["quotaValue"] = sc.QuotaValue
			}
			details = append(details, map[string]any{
				"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{v}})
		}
		if sc.RetryDelay > 0 {
			if sc.QuotaID == "" {
				details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{}})
			}
			details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo",
				"retryDelay": strconv.FormatFloat(sc.RetryDelay.Seconds(), 'f', -1, 64) + "s"})
		}
		if details != nil {
			e["details"] = details
		}
		v = map[string]any{"error": e}
	case OpenRouter:
		v = map[string]any{"error": map[string]any{"code": status, "message": msg, "metadata": map[string]any{}}}
	default:
		var code any // null when there is none
		if c := cmp.Or(sc.ErrorCode, openAICode(status)); c != "" {
			code = c
		}
		v = map[string]any{"error": map[string]any{
			"message": msg, "type": openAIType(status), "param": nil, "code": code,
		}}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func defaultMessage(f Flavor, status int) string {
	switch status {
	case http.StatusUnauthorized:
		if f == OpenRouter {
			return "No auth credentials found"
		}
		return "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys."
	case http.StatusTooManyRequests:
		return "Rate limit reached. Please try again later."
	case http.StatusNotFound:
		return "The model does not exist or you do not have access to it."
	case http.StatusServiceUnavailable:
		return "The model is overloaded. Please try again later."
	}
	return http.StatusText(status)
}

// openAICode is the error code OpenAI sends with an HTTP status; "" for none.
func openAICode(status int) string {
	return map[int]string{401: "invalid_api_key", 429: "rate_limit_exceeded", 404: "model_not_found"}[status]
}

// openAIType is the error type OpenAI sends with an HTTP status.
func openAIType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// googleStatus is the google.rpc.Code name of an HTTP status, as the Gemini API sends it.
func googleStatus(code int) string {
	return cmp.Or(map[int]string{
		400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
		429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
	}[code], "UNKNOWN")
}

// modelList serves GET /models: the models, after the next model-list script's delay,
// unless that script sends an error or a verbatim body instead.
func (s *Server) modelList(w http.ResponseWriter, r *http.Request) {
	sc, models := s.nextModelsScript()
	if !s.sleep(r.Context(), sc.HeaderDelay, nil, nil) {
		return
	}
	if sc.Status >= 400 || sc.Body != "" {
		sc.Status = cmp.Or(sc.Status, http.StatusOK)
		s.writeError(w, sc)
		return
	}
	data := make([]any, 0, len(models))
	for _, m := range models {
		if s.Flavor == OpenRouter {
			pricing := map[string]string{"prompt": "0.000001", "completion": "0.000002"}
			if m.Pricing != nil {
				pricing = m.Pricing
			}
			// The fields of a model in GET /models as OpenRouter documents them
			// (https://openrouter.ai/docs/models; Model, PublicPricing and
			// TopProviderInfo in github.com/OpenRouterTeam/go-sdk models/components).
			var expires any
			if m.Expires != "" {
				expires = m.Expires
			}
			data = append(data, map[string]any{
				"id": m.ID, "canonical_slug": m.ID, "name": m.ID, "created": 1700000000, "expiration_date": expires,
				"context_length":       m.Context,
				"architecture":         map[string]any{"modality": "text->text", "input_modalities": []string{"text"}, "output_modalities": []string{"text"}},
				"pricing":              pricing,
				"top_provider":         map[string]any{"context_length": m.Context, "max_completion_tokens": m.MaxOutput, "is_moderated": false},
				"supported_parameters": []string{"max_tokens", "reasoning", "include_reasoning"},
			})
		} else {
			data = append(data, map[string]any{"id": m.ID, "object": "model", "created": 1700000000, "owned_by": "openai"})
		}
	}
	v := map[string]any{"data": data}
	if s.Flavor == OpenAI {
		v["object"] = "list"
	}
	writeJSON(w, v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(v)
	_, _ = w.Write(b)
}
