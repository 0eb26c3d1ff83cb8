package tokens

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode"
)

// pieces splits s with nextPiece.
func pieces(s string) []string {
	vocabulary() // fills the class table
	var out []string
	for p := 0; p < len(s); {
		q := nextPiece(s, p)
		if q <= p {
			panic("nextPiece made no progress")
		}
		out = append(out, s[p:q])
		p = q
	}
	return out
}

// TestPiecesMatchRegex checks the hand-written splitter against the pieces Python's regex
// module finds with o200k_base's expression (testdata/gen_pieces.py). O200K_PIECES names
// another file of cases, for a bigger one-off check.
func TestPiecesMatchRegex(t *testing.T) {
	file := "testdata/o200k_pieces.json"
	if f := os.Getenv("O200K_PIECES"); f != "" {
		file = f
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text   string
		Pieces []string
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 1000 {
		t.Fatalf("%d cases, want the full file", len(cases))
	}
	c := NewCounter()
	for _, tc := range cases {
		got := pieces(tc.Text)
		if strings.Join(got, "\x00") != strings.Join(tc.Pieces, "\x00") {
			t.Errorf("pieces(%q)\n got %q\nwant %q", tc.Text, got, tc.Pieces)
			continue
		}
		if got, want := c.CountString(tc.Text), pkoukkCount(t, tc.Text); int(got) != want &&
			!strings.Contains(tc.Text, "'ſ") { // see TestLongS
			t.Errorf("Count(%q) = %d, pkoukk/tiktoken-go = %d", tc.Text, got, want)
		}
	}
}

func TestPiecesExamples(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"hello world", []string{"hello", " world"}},
		{"Hello WORLD's", []string{"Hello", " WORLD's"}},
		{"don't stop", []string{"don't", " stop"}},
		{"1234567", []string{"123", "456", "7"}},
		{"x := f(y)\n", []string{"x", " :=", " f", "(y", ")\n"}},
		{"a\n    \nb", []string{"a", "\n    \n", "b"}}, // tiktoken-go/tokenizer: "\n", "    \n"
		{"a\x7fb", []string{"a", "\x7fb"}},             // tiktoken-go/tokenizer drops U+007F
		{"a   b", []string{"a", "  ", " b"}},
		{"a   ", []string{"a", "   "}},
		{"x)\n/y", []string{"x", ")\n/", "y"}},
		{"日本X", []string{"日本", "X"}},
		{"\u0301a", []string{"\u0301a"}},
		{"it'ſ", []string{"it'ſ"}},
		{"\r\n\r\n", []string{"\r\n\r\n"}},
		{"  \r\n  x", []string{"  \r\n", " ", " x"}},
	}
	for _, tt := range tests {
		if got := pieces(tt.text); strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") {
			t.Errorf("pieces(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

// TestLongS: tiktoken's regex engine folds case the Unicode way, so "'ſ" (long s) is a
// contraction like "'s"; pkoukk/tiktoken-go's engine does not. The pieces differ, the
// counts here do not.
func TestLongS(t *testing.T) {
	c := NewCounter()
	for _, s := range []string{"it'ſ", "IT'ſ big", "the cat'ſ hat"} {
		if got, want := c.CountString(s), pkoukkCount(t, s); int(got) != want {
			t.Errorf("Count(%q) = %d, pkoukk/tiktoken-go = %d", s, got, want)
		}
	}
}

// TestFold checks fold against Unicode simple case folding for every rune.
func TestFold(t *testing.T) {
	for r := range rune(unicode.MaxRune + 1) {
		want := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if 'a' <= f && f <= 'z' {
				want = f
			}
		}
		if 'a' <= r && r <= 'z' {
			want = r
		}
		if got := fold(r); got != want {
			t.Fatalf("fold(%U) = %U, want %U", r, got, want)
		}
	}
}

// TestVocabulary checks the embedded vocabulary's size and that every byte is a token
// (TestVocabularyIsTheLoaders compares it with the reference's file).
func TestVocabulary(t *testing.T) {
	b := vocabulary()
	if len(b.ranks) != vocabSize {
		t.Fatalf("%d tokens, want %d", len(b.ranks), vocabSize)
	}
	for i := range 256 {
		if _, ok := b.ranks[string([]byte{byte(i)})]; !ok {
			t.Errorf("byte %#x is not a token", i)
		}
	}
}

func TestParseVocab(t *testing.T) {
	vocabulary() // fills the class table
	b, err := parseVocab([]byte("YQ== 0\nYg== 1\nYWI= 2\n"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.count("abab"); got != 2 {
		t.Errorf("count(abab) = %d, want 2", got)
	}
	for _, bad := range []string{"YQ==0\n", "Y!== 0\n", "YQ== x\n", "YQ== 0\n", " 0\nYQ== 1\n", "YQ== -1\nYg== 1\n", "YQ== 4294967296\nYg== 1\n"} {
		if _, err := parseVocab([]byte(bad), 2); err == nil {
			t.Errorf("parseVocab(%q) succeeded, want an error", bad)
		}
	}
}

// TestAwkwardWhitespace: the texts github.com/tiktoken-go/tokenizer v0.10.0 miscounts
// (an indented blank line, DEL) are counted as pkoukk/tiktoken-go counts them.
func TestAwkwardWhitespace(t *testing.T) {
	c := NewCounter()
	for _, s := range []string{
		"def f():\n    x = 1\n    \n    return x\n", // indented blank line
		"a \n \n \nb",
		"a\x7fb", // DEL
		"\x7f",
	} {
		want := pkoukkCount(t, s)
		if got := c.CountString(s); int(got) != want {
			t.Errorf("Count(%q) = %d, pkoukk/tiktoken-go = %d", s, got, want)
		}
	}
}

// TestMergeHeapMatchesScan checks the two merge algorithms against each other.
func TestMergeHeapMatchesScan(t *testing.T) {
	b := vocabulary()
	rng := rand.New(rand.NewPCG(3, 4))
	words := []string{"the", " quick", "brown", "ing", "tion", "aa", "a", " ", "  ", "\n", "é", "日本", "🙂", "x", "QQ", "0", "=="}
	for i := range 2000 {
		var sb strings.Builder
		for sb.Len() < 1+i%300 {
			sb.WriteString(words[rng.IntN(len(words))])
		}
		s := sb.String()
		if scan, heap := b.mergeScan(s), b.mergeHeap(s); scan != heap {
			t.Fatalf("%q: mergeScan %d parts, mergeHeap %d", s, scan, heap)
		}
	}
	for _, s := range []string{strings.Repeat(" ", 5000), strings.Repeat("a", 777), strings.Repeat("ab", 400)} {
		if scan, heap := b.mergeScan(s), b.mergeHeap(s); scan != heap {
			t.Fatalf("%.20q...: mergeScan %d parts, mergeHeap %d", s, scan, heap)
		}
	}
}
