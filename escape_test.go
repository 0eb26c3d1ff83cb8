package consult

import (
	"testing"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain", "src/main.go", "src/main.go"},
		{"unicode left alone", "docs/résumé 日本語 😀 a\\b.md", "docs/résumé 日本語 😀 a\\b.md"},
		{"newline", "a\nb.go", `a\nb.go`},
		{"tab and return", "a\tb\r", `a\tb\r`},
		{"OSC 52", "x\x1b]52;c;ZXZpbA==\x07.go", `x\x1b]52;c;ZXZpbA==\x07.go`},
		{"CSI", "\x1b[2J", `\x1b[2J`},
		{"DEL", "a\x7f", `a\x7f`},
		{"C1", "a\u0085b\u009b", `a\u0085b\u009b`},
		{"bidi override", "evil\u202egpj.exe", `evil\u202egpj.exe`},
		{"bidi isolates and marks", "\u2066\u2069\u200e\u200f\u061c", `\u2066\u2069\u200e\u200f\u061c`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
		{"NUL", "a\x00", `a\x00`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Printable(tt.in)
			if got != tt.want {
				t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("Printable(%q) is not valid UTF-8", tt.in)
			}
			if Printable(got) != got {
				t.Errorf("Printable is not stable on %q", got)
			}
		})
	}
}

func TestPrintableCleanDoesNotAllocate(t *testing.T) {
	s := "internal/consultation/report.go — résumé"
	if n := testing.AllocsPerRun(100, func() { _ = Printable(s) }); n != 0 {
		t.Errorf("Printable of a clean string allocated %v times, want 0", n)
	}
}

func BenchmarkPrintableClean(b *testing.B) {
	s := "internal/consultation/some/deeper/path/report_test.go"
	for b.Loop() {
		_ = Printable(s)
	}
}
