package files

import (
	"bytes"
	"cmp"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
// alphanumeric. A path that contains a backtick, invalid UTF-8 or a character that does not
// print itself (a control, C0 or C1, a bidirectional control, a zero-width character) is
// written as a Go quoted string. Content without a final newline gets one before the
// closing fence.
//
// The output depends only on the paths, contents and query, and the query comes last, so
// asking again about the same files reuses the provider's prompt cache; a changed file
// changes the prompt from that file on.
func Layout(files []File, query string) string {
	return NewPrompt(files, query).String()
}

// Prompt is a laid-out prompt that is not built: the files in Path order and the query,
// written piece by piece where they are needed ([Prompt.Prefix]), so that a request body
// can be the only copy of the files' contents. It shares the files' Content; a caller that
// drops the files once the prompt has been written frees them. [Layout] says what the
// pieces make up.
type Prompt struct {
	files  []File // sorted by Path; Content shared with the caller's files
	fences []int  // the fence length of each file
	query  string
	size   int
}

// NewPrompt lays out files (not modified) and query; see [Layout].
func NewPrompt(files []File, query string) *Prompt {
	p := &Prompt{files: slices.Clone(files), fences: make([]int, len(files)), query: query}
	slices.SortStableFunc(p.files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	p.size = len(layoutIntro) + 1 + len(layoutQuestion) + len(query)
	var scratch []byte
	for i, f := range p.files {
		p.fences[i] = max(3, longestBacktickRun(f.Content)+1)
		scratch = fileHeader(scratch[:0], f.Path, p.fences[i])
		p.size += len(scratch) + len(f.Content) + p.fences[i] + 1
		if needsNewline(f.Content) {
			p.size++
		}
	}
	return p
}

// Question is the end of the prompt, after [Prompt.Prefix]: the line that introduces the
// query, and the query.
func (p *Prompt) Question() string { return "\n" + layoutQuestion + p.query }

// Prefix yields the part of the prompt that depends only on the files, in pieces: the
// introduction, each file's header line and opening fence, its content (the caller's own
// slice) and its closing fence. A piece must not be modified or kept after yield returns.
// The same files give the same bytes, whatever the question, so a provider's prompt cache
// can hold it. Prefix then [Prompt.Question] is the whole prompt.
func (p *Prompt) Prefix(yield func([]byte) bool) {
	var scratch []byte
	if !yield([]byte(layoutIntro)) {
		return
	}
	for i, f := range p.files {
		scratch = fileHeader(scratch[:0], f.Path, p.fences[i])
		if !yield(scratch) || !yield(f.Content) {
			return
		}
		scratch = scratch[:0]
		if needsNewline(f.Content) {
			scratch = append(scratch, '\n')
		}
		scratch = appendFence(scratch, p.fences[i])
		if !yield(append(scratch, '\n')) {
			return
		}
	}
}

// String builds the whole prompt.
func (p *Prompt) String() string {
	var b strings.Builder
	b.Grow(p.size)
	for piece := range p.Prefix {
		b.Write(piece)
	}
	b.WriteString(p.Question())
	return b.String()
}

// fileHeader appends a file's header line and opening fence to dst:
// "\nFile: <path>\n```<info>\n".
func fileHeader(dst []byte, path string, fence int) []byte {
	dst = append(dst, "\nFile: "...)
	dst = append(dst, headerPath(path)...)
	dst = append(dst, '\n')
	dst = appendFence(dst, fence)
	dst = append(dst, infoString(path)...)
	return append(dst, '\n')
}

func appendFence(dst []byte, n int) []byte {
	for range n {
		dst = append(dst, '`')
	}
	return dst
}

// needsNewline reports whether content needs a newline before its closing fence.
func needsNewline(content []byte) bool {
	return len(content) > 0 && content[len(content)-1] != '\n'
}

func longestBacktickRun(b []byte) int {
	longest := 0
	for {
		i := bytes.IndexByte(b, '`')
		if i < 0 {
			return longest
		}
		run := 1
		for i+run < len(b) && b[i+run] == '`' {
			run++
		}
		longest = max(longest, run)
		b = b[i+run:]
	}
}

// headerPath returns the path as its header line shows it: as it is, or as a Go quoted
// string when it holds a backtick, invalid UTF-8 or a character that does not print itself
// (strconv.IsPrint): C0 and C1 controls such as U+009B (a terminal's CSI), the bidirectional
// controls such as U+202E (which reorder what is shown), line separators, zero-width and
// other format characters, every character consult.Printable escapes and more. A file name
// is the tree's author's; raw, it could forge a header or hide what follows it.
func headerPath(p string) string {
	for i := 0; i < len(p); {
		c := p[i]
		if c >= 0x20 && c < 0x7f && c != '`' {
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(p[i:])
		if c < 0x80 || r == utf8.RuneError && size == 1 || !strconv.IsPrint(r) {
			return strconv.Quote(p)
		}
		i += size
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
