package tokens

import "strings"

// o200kFamilies are the OpenAI model families that tokenize with o200k_base, as in
// tiktoken's model table. gpt-oss uses o200k_harmony, which is o200k_base plus special
// tokens for its chat format: the same tokens for text.
var o200kFamilies = []string{
	"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "gpt-oss", "o1", "o3", "o4",
}

// cl100kFamilies are the older OpenAI families, which tokenize with cl100k_base.
var cl100kFamilies = []string{"gpt-4", "gpt-3.5", "gpt-35"}

// families names the tokenizer family of other models, by a word in the model id.
var families = []struct{ word, family string }{
	{"claude", "Claude"},
	{"gemini", "Gemini"},
	{"gemma", "Gemma"},
	{"llama", "Llama"},
	{"mistral", "Mistral"}, {"mixtral", "Mistral"}, {"codestral", "Mistral"},
	{"devstral", "Mistral"}, {"magistral", "Mistral"}, {"ministral", "Mistral"},
	{"pixtral", "Mistral"},
	{"qwen", "Qwen"}, {"qwq", "Qwen"},
	{"deepseek", "DeepSeek"},
	{"grok", "Grok"},
	{"kimi", "Kimi"},
	{"glm", "GLM"},
	{"command", "Command"},
	{"phi-", "Phi"},
	{"nova", "Nova"},
}

// vendors names the tokenizer family by an OpenRouter vendor prefix, when the model id
// itself does not say.
var vendors = map[string]string{
	"anthropic":  "Claude",
	"google":     "Gemini",
	"meta-llama": "Llama",
	"mistralai":  "Mistral",
	"qwen":       "Qwen",
	"deepseek":   "DeepSeek",
	"x-ai":       "Grok",
	"moonshotai": "Kimi",
	"z-ai":       "GLM",
	"cohere":     "Command",
	"amazon":     "Nova",
	"microsoft":  "Phi",
}

// splitModel lower-cases model, drops a "|thinking" suffix and a fine-tune "ft:" prefix,
// and splits off a provider prefix ("openai/gpt-4o" on OpenRouter, "models/gemini-2.5-pro"
// on Gemini).
func splitModel(model string) (vendor, name string) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.IndexByte(m, '|'); i >= 0 {
		m = m[:i]
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		vendor, m = m[:i], m[i+1:]
	}
	return vendor, strings.TrimPrefix(m, "ft:")
}

// inFamily reports whether name is family or a member of it: "gpt-4o", "gpt-4o-mini",
// "gpt-5.1", "o3-pro", "gpt-4o:extended" are; "gpt-4" is not in "gpt-4o", "o30" not in "o3".
func inFamily(name, family string) bool {
	rest, ok := strings.CutPrefix(name, family)
	if !ok {
		return false
	}
	if rest == "" {
		return true
	}
	c := rest[0]
	return !('a' <= c && c <= 'z' || '0' <= c && c <= '9')
}

func inAny(name string, families []string) bool {
	for _, f := range families {
		if inFamily(name, f) {
			return true
		}
	}
	return false
}

// ExactFor reports whether counts from a [Counter] are exact for model, that is whether
// model tokenizes with o200k_base: OpenAI's gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*,
// gpt-5*, gpt-oss*, o1*, o3* and o4* models, with or without an "openai/" prefix
// (OpenRouter ids), a fine-tune "ft:" prefix, an OpenRouter ":variant" or a "|thinking"
// suffix; case does not matter. For every other model, Claude, Gemini, Llama and older
// OpenAI models included, a count is an estimate.
func ExactFor(model string) bool {
	vendor, name := splitModel(model)
	if vendor != "" && vendor != "openai" {
		return false
	}
	return inAny(name, o200kFamilies)
}

// Label says in a few words how a count relates to model, for reports: "exact
// (o200k_base)" when [ExactFor] is true, otherwise "estimate (o200k_base; Claude uses its
// own tokenizer)" with the model's family, or the model id when the family is not known.
func Label(model string) string {
	if ExactFor(model) {
		return "exact (" + Encoding + ")"
	}
	vendor, name := splitModel(model)
	if (vendor == "" || vendor == "openai") && inAny(name, cl100kFamilies) {
		return "estimate (" + Encoding + "; " + name + " uses cl100k_base)"
	}
	return "estimate (" + Encoding + "; " + family(vendor, name, model) + " uses its own tokenizer)"
}

// family names the tokenizer family of a model that does not use o200k_base.
func family(vendor, name, model string) string {
	for _, f := range families {
		if strings.Contains(name, f.word) {
			return f.family
		}
	}
	if f, ok := vendors[vendor]; ok {
		return f
	}
	model, _, _ = strings.Cut(strings.TrimSpace(model), "|")
	if model == "" {
		return "the model"
	}
	if r := []rune(model); len(r) > maxLabelModel {
		return string(r[:maxLabelModel-1]) + "…"
	}
	return model
}

// maxLabelModel is the most characters of a model id that a label repeats: ids are
// under 100 characters, and a label is a few words.
const maxLabelModel = 60
