package consultation

// The small words every outcome's words are made of: counts, shares, prices, tokens.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	consult "github.com/consultmcp/consult"
)

// printables is ss with each string escaped by consult.Printable; ss itself when none needs it.
func printables(ss []string) []string {
	for i, s := range ss {
		if consult.Printable(s) != s {
			out := slices.Clone(ss)
			for k := i; k < len(out); k++ {
				out[k] = consult.Printable(out[k])
			}
			return out
		}
	}
	return ss
}

// windowNote is " (N tokens)" for a known window, "" otherwise.
func windowNote(w consult.Tokens) string {
	if w <= 0 {
		return ""
	}
	return " (" + w.String() + " tokens)"
}

func percent(part, whole consult.Tokens) int64 {
	if whole <= 0 {
		return 0
	}
	return int64((part*100 + whole - 1) / whole)
}

// share is part's share of whole in words: "under 1%" below one percent, else the
// percentage rounded up ("12%").
func share(part, whole consult.Tokens) string {
	if part > 0 && part*100 < whole {
		return "under 1%"
	}
	return strconv.FormatInt(percent(part, whole), 10) + "%"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// deref is *p, or 0 for nil.
func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// perMillion writes a price per million tokens without trailing zeros: "1.25", "0.075".
func perMillion(v float64) string {
	s := fmt.Sprintf("%.4f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "" {
		return "0"
	}
	return s
}

// FormatUSD writes a price in dollars: cents for a dollar or more, and two significant
// digits below ("$0.0000058"), never "$0.0000" for a cost that is not zero.
func FormatUSD(v float64) string {
	switch {
	case v == 0:
		return "$0"
	case v >= 1:
		return fmt.Sprintf("$%.2f", v)
	case v >= 0.01:
		return fmt.Sprintf("$%.4f", v)
	}
	digits := int(-math.Floor(math.Log10(v))) + 1 // two significant digits
	return "$" + strconv.FormatFloat(v, 'f', min(digits, 12), 64)
}

// tokensWord is "1 reasoning token", "1,200 reasoning tokens".
func tokensWord(n consult.Tokens, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return n.String() + " " + one + "s"
}
