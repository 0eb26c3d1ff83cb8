package providers

// escapers are the escapings of this system, each checked against encoding/json.
func escapers() map[string]escaper {
	e := map[string]escaper{"generic": {escapedLenGeneric, escapeToGeneric}}
	if avx2 {
		e["avx2"] = escaper{escapedLen, escapeTo}
	}
	return e
}
