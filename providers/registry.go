package providers

import (
	"cmp"
	"strings"
)

// Provider names, as used on the command line and in [Provider.Name].
const (
	NameOpenRouter = "openrouter"
	NameOpenAI     = "openai"
	NameGemini     = "gemini"
)

// Spec is everything the rest of the program knows of a provider before building it.
type Spec struct {
	// Name is the provider's name on the command line and in errors.
	Name string
	// KeyEnv are the environment variables that may hold the API key, in order: the first
	// one set wins.
	KeyEnv []string
	// DefaultModel is used when neither --model nor the call names one: a fast model that
	// the fallback table knows (so it is priced offline too), current and with no removal
	// date listed on catalog.TableDate.
	DefaultModel string
	// DefaultBaseURL is the provider's public endpoint, used when [Config.BaseURL] is empty.
	DefaultBaseURL string
	// ZDR says whether the provider can be asked, per request, to keep no data
	// ([Config.ZDR]); New refuses a Config asking for it when it cannot.
	ZDR bool
	// New builds the provider.
	New func(Config) (Provider, error)
}

// Registry lists every provider, in the order the usage text names them. It is the one
// place a provider is declared: the command line, the usage text, the error advice and the
// tests all read it. (A function rather than a variable: the constructors read it back for
// their defaults, which a package variable could not allow.)
func Registry() []Spec {
	return []Spec{
		{
			Name: NameOpenRouter, KeyEnv: []string{"OPENROUTER_API_KEY"},
			DefaultModel: "google/gemini-3.1-flash-lite", DefaultBaseURL: "https://openrouter.ai/api/v1", ZDR: true,
			New: func(c Config) (Provider, error) { return NewOpenRouter(c) },
		},
		{
			Name: NameOpenAI, KeyEnv: []string{"OPENAI_API_KEY"},
			DefaultModel: "gpt-5.4-mini", DefaultBaseURL: "https://api.openai.com/v1",
			New: func(c Config) (Provider, error) { return NewOpenAI(c) },
		},
		{
			Name: NameGemini, KeyEnv: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"},
			// The client adds the API version (v1beta) to the endpoint.
			DefaultModel: "gemini-3.1-flash-lite", DefaultBaseURL: "https://generativelanguage.googleapis.com/",
			New: func(c Config) (Provider, error) { return NewGemini(c) },
		},
	}
}

// Lookup returns the provider called name; ok is false when there is none.
func Lookup(name string) (spec Spec, ok bool) {
	for _, s := range Registry() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists the providers' names in [Registry] order.
func Names() []string {
	specs := Registry()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// keyEnv names the environment variables that hold a provider's key, for advice:
// "GEMINI_API_KEY or GOOGLE_API_KEY".
func keyEnv(provider string) string {
	if s, ok := Lookup(provider); ok && len(s.KeyEnv) > 0 {
		return strings.Join(s.KeyEnv, " or ")
	}
	return "the provider's key variable"
}

// baseURL is cfg.BaseURL, or the provider's public endpoint when it is empty.
func baseURL(provider string, cfg Config) string {
	s, _ := Lookup(provider)
	return cmp.Or(cfg.BaseURL, s.DefaultBaseURL)
}
