package secrets

import (
	"math/bits"

	"golang.org/x/sys/cpu"
)

// anchorMasks sets bit j of masks[w] when b[64*w+j] is an anchor byte ('-', 'k', 'A' or
// '_'), for each whole 64-byte block of b that masks has room for. It compares 16 bytes
// at a time with SSE2, which every amd64 processor has.
//
//go:noescape
func anchorMasks(b []byte, masks []uint64)

// anchorOf maps a byte to its index in anchors, or -1.
var anchorOf = func() (t [256]int8) {
	for c := range t {
		t[c] = -1
	}
	for k, a := range anchors {
		t[a.b] = int8(k)
	}
	return t
}()

// anchorBit, nearBefore and nearAfter let find pass over most hits without a call:
// anchorBit[c[i]] is 1<<k for anchors[k]; nearBefore[c[i-1]] and nearAfter[c[i+1]] have
// bit k set where that byte may stand beside anchors[k] in what s.at looks at further (a
// rule's prefix, or the second dash of "-----BEGIN ").
var anchorBit, nearBefore, nearAfter = func() (bit, before, after [256]uint8) {
	for k, a := range anchors {
		bit[a.b] = 1 << k
		side := &before
		if a.rel == +1 {
			side = &after
		}
		for c, ok := range a.near {
			if ok {
				side[c] |= 1 << k
			}
		}
	}
	after['-'] |= 1 << dashAnchor
	return bit, before, after
}()

// maskBlocks is how many 64-byte blocks one anchorMasks call covers.
const maskBlocks = 64

// find calls s.at for each anchor byte of s.content that s.at may act on, in the order they
// come, and reports whether one found a private key. One pass finds the four anchor bytes:
// a bytes.IndexByte pass for each costs a call per hit, and $GOROOT/src holds one anchor
// byte in 50. With AVX2 the pass also looks at the bytes beside each anchor, and only one
// hit in ten is left.
func (s *scan) find() bool {
	if avx2 {
		return s.findAVX2()
	}
	return s.findSSE2()
}

// avx2 reports whether the processor and the system support AVX2.
var avx2 = cpu.X86.HasAVX2

// anchorMasksAVX2 sets bit j of masks[w] when the byte at b[1+64*w+j] is an anchor byte
// that the bytes beside it let through (anchorBit & (nearBefore | nearAfter)), for each
// whole 64-byte block of b[1:len(b)-1] that masks has room for. t holds the nibble tables.
//
//go:noescape
func anchorMasksAVX2(b []byte, masks []uint64, t *[8][32]byte)

// nibbleTables are AVX2 look-up tables, each of 16 bytes given twice (one per 128-bit
// lane) and indexed by one half of a byte. A byte x is in a set when
// lo[x&15] & hi[x>>4] != 0; a set with more than one high half takes a bit for each.
// before: the byte before an anchor; bits 0-3 for '-' (ABEKO PRS abeko prst), 4-6 for '_'
// (BKM bkmo prsu), 7 for 'k' (o). after: the byte after; bits 0-2 for 'A' (BCIK S 3), 3
// for '-' ('-', the key check). anchorBefore and anchorAfter give each anchor byte the
// bits that apply to it.
var nibbleTables = func() (t [8][32]byte) {
	tables := [8][16]byte{
		{0: 0x4a, 1: 0x05, 2: 0x7f, 3: 0x4a, 4: 0x08, 5: 0x45, 0xb: 0x35, 0xd: 0x30, 0xf: 0xa5}, // before, low
		{4: 0x11, 5: 0x02, 6: 0xa4, 7: 0x48},                                                    // before, high
		{2: 0x01, 3: 0x07, 9: 0x01, 0xb: 0x01, 0xd: 0x08},                                       // after, low
		{2: 0x08, 3: 0x04, 4: 0x01, 5: 0x02},                                                    // after, high
		{0xb: 0x80, 0xd: 0x0f, 0xf: 0x70},                                                       // anchorBefore, low: k - _
		{2: 0x0f, 5: 0x70, 6: 0x80},                                                             // anchorBefore, high
		{1: 0x07, 0xd: 0x08},                                                                    // anchorAfter, low: A -
		{2: 0x08, 4: 0x07},                                                                      // anchorAfter, high
	}
	for i, tab := range tables {
		copy(t[i][:16], tab[:])
		copy(t[i][16:], tab[:])
	}
	return t
}()

// findAVX2 is find with anchorMasksAVX2; the bytes it cannot look at both sides of (the
// first, and the last ones) go through the table check of findSSE2.
func (s *scan) findAVX2() bool {
	c := s.content
	var masks [maskBlocks]uint64
	whole := 1
	if len(c) >= 2 {
		whole += (len(c) - 2) &^ 63
	}
	if s.tail(0, min(1, len(c))) {
		return true
	}
	for base := 1; base < whole; base += 64 * maskBlocks {
		n := min(whole-base, 64*maskBlocks)
		anchorMasksAVX2(c[base-1:base+n+1], masks[:], &nibbleTables)
		for w, m := range masks[:n/64] {
			for m != 0 {
				i := base + 64*w + bits.TrailingZeros64(m)
				m &= m - 1
				if s.at(int(anchorOf[c[i]]), i) {
					return true
				}
			}
		}
	}
	return s.tail(whole, len(c))
}

// tail calls s.at for the anchor bytes of s.content[from:to], one byte at a time.
func (s *scan) tail(from, to int) bool {
	for i := from; i < to; i++ {
		if k := anchorOf[s.content[i]]; k >= 0 && s.at(int(k), i) {
			return true
		}
	}
	return false
}

// findSSE2 is find with anchorMasks.
func (s *scan) findSSE2() bool {
	c := s.content
	var masks [maskBlocks]uint64
	whole := len(c) &^ 63
	for base := 0; base < whole; base += 64 * maskBlocks {
		n := min(whole-base, 64*maskBlocks)
		anchorMasks(c[base:base+n], masks[:])
		for w, m := range masks[:n/64] {
			for m != 0 {
				i := base + 64*w + bits.TrailingZeros64(m)
				m &= m - 1
				if i > 0 && i+1 < len(c) && anchorBit[c[i]]&(nearBefore[c[i-1]]|nearAfter[c[i+1]]) == 0 {
					continue
				}
				if s.at(int(anchorOf[c[i]]), i) {
					return true
				}
			}
		}
	}
	return s.tail(whole, len(c))
}
