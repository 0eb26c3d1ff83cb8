// Package providers sends one consultation to a large-context model and streams the answer
// back. It has one small interface, [Provider], and three implementations: [OpenRouter] and
// [OpenAI] through a small OpenAI-style chat-completions client, and [Gemini] through a
// small client of Google's API, both on net/http and encoding/json alone, their events read
// by the package's SSE reader. It does not import mcp-go.
//
// # Guarantees
//
// Every implementation sends a request exactly once: the chat client has no retries; the
// Gemini client posts once and never follows a continuation token. The retry loop belongs
// to the caller, which knows the deadline; it asks [Retryable]. Failures are [*Error] values with a [Kind], usable with errors.Is
// (errors.Is(err, providers.RateLimited)) and errors.As. When the request context ends,
// Stream returns at once with a [Canceled] error wrapping ctx.Err() and context.Cause, and
// the HTTP request is cancelled, which closes its connection. No error or log line contains
// the API key: upstream messages are scrubbed of it (and of anything shaped like a key).
//
// The prompt exists once: each request body is encoded once ([Encoder.Encode]), the user
// message escaped straight into one buffer in one pass (from files.Prompt's
// pieces, so there is no prompt string either) around the encoding of the rest of the
// request, and every attempt sends those bytes ([Request.Body]) as its request's body.
// Tests hold the chat bodies to the bytes openai-go wrote for the same requests
// (TestBodyPinned), and Gemini's byte for byte to what Google's Go SDK sent
// (testdata/gemini_requests.txtar).
//
// Upstream liveness is measured at the HTTP transport, below the stream readers: wrap the
// client's transport with [ActivityTransport] and put a callback in the request context
// with [WithActivity]; it sees every byte, including the SSE keep-alive comments the
// stream readers skip.
//
// # Thinking
//
// Request.Thinking maps onto each API as follows (N is Thinking.Budget, M is
// Request.MaxOutput, A is [DefaultAnswerTokens], R is [DefaultReasoningRoom]):
//
//	                 off                   on, no budget                       on, budget N
//	OpenRouter       -                     reasoning {"effort":"high"}         reasoning {"max_tokens":N}
//	OpenAI           -                     reasoning_effort "high"             reasoning_effort low (N<=4k) / medium (<=16k) / high
//	Gemini           -                     thinkingBudget -1 (dynamic);        thinkingBudget N (clamped to the 2.5
//	                                       Gemini 3: thinkingLevel HIGH        models' ranges); includeThoughts
//
// OpenAI gets reasoning_effort only for models that accept it (not gpt-4*, gpt-3.5*,
// chatgpt-*, gpt-5*-chat). Gemini asks for thought summaries (includeThoughts) so they
// arrive as reasoning. Reasoning text never becomes Response.Text; its token count is
// Usage.Reasoning.
//
// The output limit sent (OpenRouter max_tokens, OpenAI max_completion_tokens, Gemini
// maxOutputTokens) counts reasoning, as all three APIs do (and bill it as output). A caller
// that prices the request sets Request.OutputLimit (L), sent as it is; a thinking budget
// is then cut to leave [MinAnswerRoom] (at most a quarter of L) for the answer. Otherwise
// the limit leaves room for the answer:
//
//	L > 0                        L
//	M > 0, thinking off          M
//	M > 0, budget N              M + N
//	M > 0, on without budget     M + R
//	M = 0, budget N              N + A (OpenRouter, Gemini); none for OpenAI, whose effort levels do not cap reasoning
//	M = 0, otherwise             none: the model's own maximum, the most room there is
//
// # Wire behaviour worth knowing
//
//   - The chat client reads the stream as the HTML standard's event stream interpretation
//     says (comments such as ": OPENROUTER PROCESSING" skipped), stops at "[DONE]", and
//     takes an event whose data has an "error" member, or whose type is "error", for an
//     in-band error. OpenRouter's fields (reasoning deltas, native_finish_reason, usage
//     cost and cache_write_tokens) are plain fields of its chunk type.
//   - The chat client reads no environment variable: the key, the endpoint and the headers
//     are what the caller configured (openai-go read OPENAI_ORG_ID and OPENAI_PROJECT_ID).
//     It follows a redirect only within the endpoint's origin.
//   - A stream that ends without a finish reason (a cut connection that still closed
//     cleanly) is a [Transport] error, not an answer.
//   - The Gemini client follows a redirect only within the endpoint's origin too (Go would
//     forward its X-Goog-Api-Key header to any host), and reads the stream as Google's Go
//     SDK did where that matters: a last event the stream ends without its blank line
//     still counts, and an error event or response is Google's error JSON (code, status,
//     message, details).
package providers
