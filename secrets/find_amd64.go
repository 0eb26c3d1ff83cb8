package secrets

import "math/bits"

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

// find calls s.at for each anchor byte of s.content, in the order they come, and reports
// whether one found a private key. One pass finds the four anchor bytes: a bytes.IndexByte
// pass for each costs a call per hit, and $GOROOT/src holds one anchor byte in 50.
func (s *scan) find() bool {
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
	for i := whole; i < len(c); i++ {
		if k := anchorOf[c[i]]; k >= 0 && s.at(int(k), i) {
			return true
		}
	}
	return false
}
