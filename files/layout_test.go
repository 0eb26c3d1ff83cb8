package files

import (
	"strings"
	"testing"
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
	for in, want := range map[string]int{"": 0, "a`b": 1, "``x```": 3, "````": 4} {
		if got := longestBacktickRun([]byte(in)); got != want {
			t.Errorf("longestBacktickRun(%q) = %d, want %d", in, got, want)
		}
	}
}
