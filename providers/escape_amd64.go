package providers

import (
	"encoding/binary"
	"unicode/utf8"

	"golang.org/x/sys/cpu"
)

// avx2 reports whether escapedLen and escapeTo take 32 bytes at a time: the processor and
// the system support AVX2, and the processor has POPCNT.
var avx2 = cpu.X86.HasAVX2 && cpu.X86.HasPOPCNT

// escapedLen is the length of s as a JSON string's content: what escapeTo writes.
//
// With AVX2 it counts 32 bytes at a time, runs of runes above 0x7f aside: each needs
// its UTF-8 checked, and U+2028 and U+2029 are escaped.
func escapedLen(s []byte) int {
	if !avx2 {
		return escapedLenGeneric(s)
	}
	n, i := 0, 0
	for len(s)-i >= 32 {
		m, k := escapedLenAVX2(s[i:])
		n += m
		i += k
		for i < len(s) && s[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			n += runeLen(r, size)
			i += size
		}
	}
	return n + escapedLenGeneric(s[i:])
}

// escapedLenAVX2 counts s 32 bytes at a time up to its first byte above 0x7f, or to the
// end of its last whole block, and returns i, where it stopped, and n, escapedLen(s[:i]).
//
//go:noescape
func escapedLenAVX2(s []byte) (n, i int)

// escapeTo writes s at the start of dst as the content of a JSON string, escaped as
// encoding/json does without its HTML escaping (which JSON does not need): quote,
// backslash and control characters escaped, invalid UTF-8 replaced by U+FFFD, U+2028 and
// U+2029 escaped. dst must have room for escapedLen(s) bytes; it returns that length, and
// writes nothing past it.
//
// With AVX2 it copies 32 bytes at a time; see escapeAVX2. Runes above 0x7f, and the last
// bytes of s, go through escapeOne and escapeToGeneric.
func escapeTo(dst, s []byte) int {
	if !avx2 {
		return escapeToGeneric(dst, s)
	}
	n, i := 0, 0
	for len(s)-i >= 64 {
		m, k := escapeAVX2(dst[n:], s[i:], &escapeWords, &expandShuffles)
		n += m
		i += k
		if i == len(s) || s[i] < utf8.RuneSelf {
			break // too near the end of s or of dst
		}
		for i < len(s) && s[i] >= utf8.RuneSelf {
			n, i = escapeOne(dst, n, s, i)
		}
	}
	return n + escapeToGeneric(dst[n:], s[i:])
}

// escapeAVX2 escapes s into dst as escapeTo does, 32 bytes at a time, while at least 64
// bytes of s are left and 224 of dst, and up to the first byte above 0x7f; it returns how
// many bytes it wrote and read. It stores each block whole. A block whose special bytes
// all take a two-byte escape (most blocks of source code: tabs, newlines, quotes) is
// then written again 8 bytes at a time, each special byte replaced by its letter and the
// 8 shuffled (expand) into 16 with a backslash before each letter. In another block each
// special byte's escape is stored (a word of words), then the block's bytes from the
// next one on (32 bytes read from s). At least 32 bytes of s are left past any store's
// start, each written as one byte or more, so every store stays within escapedLen(s) of
// the output so far, and the later stores overwrite what an earlier one wrote past it.
// 224 bytes of dst are room for a block of six-byte escapes (6×32) and one store.
//
//go:noescape
func escapeAVX2(dst, s []byte, words *[utf8.RuneSelf]uint64, expand *[256][16]byte) (n, i int)

// expandShuffles is, for each set of the 8 bytes of a word that take a two-byte escape
// (bit j for byte j), the shuffle that writes the word with a byte before each of them:
// the byte's index, or 0x80 for the backslash.
var expandShuffles = func() (t [256][16]byte) {
	for m := range t {
		j := 0
		for b := range 8 {
			if m>>b&1 != 0 {
				t[m][j] = 0x80
				j++
			}
			t[m][j] = byte(b)
			j++
		}
	}
	return t
}()

// escapeWords is, for each ASCII byte that needs escaping, its escape in the low bytes
// of a little-endian word and the escape's length in the top byte.
var escapeWords = func() (t [utf8.RuneSelf]uint64) {
	for c := range t {
		if asciiLen[c] == 1 {
			continue
		}
		var w [8]byte
		n, _ := escapeOne(w[:], 0, []byte{byte(c)}, 0)
		w[7] = byte(n)
		t[c] = binary.LittleEndian.Uint64(w[:])
	}
	return t
}()
