package consult

import "testing"

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"path", "path", 0}, {"paht", "path", 2}, {"pattern", "patern", 1},
		{"gpt-5-typo", "gpt-5.4", 5}, {"", "abc", 3}, {"abc", "", 3},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
