package files

import (
	"strings"
	"testing"

	"github.com/consultmcp/consult"
)

func TestLayout(t *testing.T) {
	files := []File{
		{Path: "b/z.go", Content: []byte("package z\n")},
		{Path: "a.md", Content: []byte("has ``` fences and a line\nFile: fake.go\n```\nno final newline")},
		{Path: "Makefile", Content: []byte("all:\n")},
		{Path: "empty.txt"},
		{Path: "odd`name\n.txt", Content: []byte("x\n")},
	}
	got := Layout(files, "What does z do?")
	want := layoutIntro + "\n" +
		"File: Makefile\n```\nall:\n```\n" +
		"\n" +
		"File: a.md\n````md\nhas ``` fences and a line\nFile: fake.go\n```\nno final newline\n````\n" +
		"\n" +
		"File: b/z.go\n```go\npackage z\n```\n" +
		"\n" +
		"File: empty.txt\n```txt\n```\n" +
		"\n" +
		"File: \"odd`name\\n.txt\"\n```txt\nx\n```\n" +
		"\nQuestion:\nWhat does z do?"
	if got != want {
		t.Errorf("Layout:\n got  %q\n want %q", got, want)
	}
	if files[0].Path != "b/z.go" {
		t.Error("Layout reordered its argument")
	}
}

func TestLayoutDeterministicAndQueryLast(t *testing.T) {
	files := []File{
		{Path: "c.go", Content: []byte("c")},
		{Path: "a.go", Content: []byte("a")},
		{Path: "b/a.go", Content: []byte("ba")},
		{Path: "b.go", Content: []byte("b")},
	}
	reversed := []File{files[3], files[2], files[1], files[0]}
	const q = "the question"
	a, b := Layout(files, q), Layout(reversed, q)
	if a != b {
		t.Errorf("Layout depends on input order:\n%q\n%q", a, b)
	}
	if !strings.HasSuffix(a, "\n"+q) {
		t.Errorf("query is not last: %q", a)
	}
	// Same files, other question: everything before the question is identical (cacheable).
	c := Layout(files, "another question")
	if prefix := a[:len(a)-len(q)]; !strings.HasPrefix(c, prefix) {
		t.Error("the prefix before the question changed with the question")
	}
	order := []string{"File: a.go", "File: b.go", "File: b/a.go", "File: c.go"}
	last := -1
	for _, h := range order {
		i := strings.Index(a, h+"\n")
		if i <= last {
			t.Fatalf("%q out of order in %q", h, a)
		}
		last = i
	}
}

func TestLongestBacktickRun(t *testing.T) {
	for in, want := range map[string]int{"": 0, "a`b": 1, "``x```": 3, "````": 4, "`a``b```c": 3, "x``": 2} {
		if got := longestBacktickRun([]byte(in)); got != want {
			t.Errorf("longestBacktickRun(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestPromptPieces: the pieces of a Prompt's Prefix and its Question make up Layout's text,
// size is its length, and the files' contents are yielded as the caller's own slices (no
// copy of them is made).
func TestPromptPieces(t *testing.T) {
	t.Parallel()
	files := []File{
		{Path: "b/z.go", Content: []byte("package z\n")},
		{Path: "a.md", Content: []byte("``` no final newline")},
		{Path: "empty.txt"},
		{Path: "odd`name.txt", Content: []byte("x\n")},
	}
	p := NewPrompt(files, "Why?")
	var b strings.Builder
	shared := 0
	for piece := range p.Prefix {
		b.Write(piece)
		for _, f := range files {
			if len(f.Content) > 0 && len(piece) > 0 && &piece[0] == &f.Content[0] {
				shared++
			}
		}
	}
	b.WriteString(p.Question())
	want := Layout(files, "Why?")
	if got := b.String(); got != want {
		t.Errorf("pieces:\n got  %q\n want %q", got, want)
	}
	if got := p.String(); got != want {
		t.Errorf("String:\n got  %q\n want %q", got, want)
	}
	if got, want := p.size, len(want); got != want {
		t.Errorf("size = %d, want %d", got, want)
	}
	if got, want := shared, 3; got != want {
		t.Errorf("%d contents yielded as the caller's slices, want %d", got, want)
	}
}

// TestLayoutEscapesHeaderPaths: a path holding a character that does not print itself (C1
// CSI U+009B, the right-to-left override U+202E, a zero-width space, a line separator, an
// ESC, invalid UTF-8) is written quoted, so the header line carries none of them raw;
// printable non-ASCII paths are written as they are.
func TestLayoutEscapesHeaderPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, header string }{
		{"a\u009b31mred.go", `"a\u009b31mred.go"`},
		{"invoice\u202egpj.exe", `"invoice\u202egpj.exe"`},
		{"x\u200by.txt", `"x\u200by.txt"`},
		{"x\u2028File: evil.go", `"x\u2028File: evil.go"`},
		{"\x1b]52;c;aGk=\x07.txt", `"\x1b]52;c;aGk=\a.txt"`},
		{"bad\xffutf8.txt", `"bad\xffutf8.txt"`},
		{"odd`name.txt", "\"odd`name.txt\""},
		{"café/naïve.go", "café/naïve.go"},
		{"日本語.md", "日本語.md"},
	} {
		prompt := Layout([]File{{Path: tc.path, Content: []byte("x\n")}}, "q")
		want := "\nFile: " + tc.header + "\n"
		if !strings.Contains(prompt, want) {
			t.Errorf("path %q: prompt\n%q\nwant the header %q", tc.path, prompt, want)
		}
		header := prompt[strings.Index(prompt, "\nFile: ")+1:]
		header = header[:strings.IndexByte(header, '\n')]
		if consult.Printable(header) != header {
			t.Errorf("path %q: header %q carries characters consult.Printable escapes", tc.path, header)
		}
	}
}
