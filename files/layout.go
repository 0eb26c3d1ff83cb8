package files

import (
	"cmp"
	"path"
	"slices"
	"strconv"
	"strings"
)

// layoutIntro opens every prompt. It never changes, so it is part of the cached prefix.
const layoutIntro = "The files below are the context for the question at the end. " +
	"Each file is a line \"File: <path>\" (path relative to the directory being asked about) " +
	"followed by its content in a fenced block.\n"

// layoutQuestion introduces the query, after the last file.
const layoutQuestion = "Question:\n"

// Layout builds the prompt: a fixed one-line introduction, then every file in Path order
// (byte order; files is not modified), then the query last:
//
//	File: cmd/main.go
//	```go
//	package main
//	```
//
//	Question:
//	<query>
//
// Each file sits in a Markdown (CommonMark) fenced block whose fence is a run of backticks
// longer than any run of backticks in the file, at least three, so no line of a file can
// close its block and a "File:" line inside a file is plainly content. The info string is
// the file's extension ("go", "md"), omitted when it has none or it is not plain
// alphanumeric. A path that contains a control character or a backtick is written as a Go
// quoted string. Content without a final newline gets one before the closing fence.
//
// The output depends only on the paths, contents and query, and the query comes last, so
// asking again about the same files reuses the provider's prompt cache; a changed file
// changes the prompt from that file on.
func Layout(files []File, query string) string {
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })

	n := len(layoutIntro) + len(layoutQuestion) + len(query) + 1
	for _, f := range sorted {
		n += len(f.Path) + len(f.Content) + 32
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(layoutIntro)
	for _, f := range sorted {
		fence := strings.Repeat("`", max(3, longestBacktickRun(f.Content)+1))
		b.WriteString("\nFile: ")
		b.WriteString(headerPath(f.Path))
		b.WriteByte('\n')
		b.WriteString(fence)
		b.WriteString(infoString(f.Path))
		b.WriteByte('\n')
		b.Write(f.Content)
		if len(f.Content) > 0 && f.Content[len(f.Content)-1] != '\n' {
			b.WriteByte('\n')
		}
		b.WriteString(fence)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(layoutQuestion)
	b.WriteString(query)
	return b.String()
}

func longestBacktickRun(b []byte) int {
	longest, run := 0, 0
	for _, c := range b {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

func headerPath(p string) string {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f || c == '`' {
			return strconv.Quote(p)
		}
	}
	return p
}

func infoString(p string) string {
	ext := strings.TrimPrefix(path.Ext(p), ".")
	if ext == "" || len(ext) > 16 {
		return ""
	}
	for i := 0; i < len(ext); i++ {
		c := ext[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return ext
}
