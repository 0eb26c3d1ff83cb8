package secrets

import (
	"math/rand/v2"
	"testing"
)

// finders are the one-pass finds of this system, each checked against findEach.
func finders() map[string]func(*scan) bool {
	f := map[string]func(*scan) bool{"sse2": (*scan).findSSE2}
	if avx2 {
		f["avx2"] = (*scan).findAVX2
	}
	return f
}

// TestAnchorMasksAVX2 checks the AVX2 pass bit by bit against the tables findSSE2 uses, on
// random bytes of every value.
func TestAnchorMasksAVX2(t *testing.T) {
	if !avx2 {
		t.Skip("no AVX2")
	}
	t.Parallel()
	const set = "-kA_oKSBC3IpusrmMbBtTePaRsO\x00\x80\xff"
	for range 200 {
		b := make([]byte, 2+64*rand.IntN(5)+rand.IntN(70))
		for i := range b {
			if rand.IntN(2) == 0 {
				b[i] = byte(rand.IntN(256))
			} else {
				b[i] = set[rand.IntN(len(set))]
			}
		}
		var masks [8]uint64
		anchorMasksAVX2(b, masks[:], &nibbleTables)
		for i := 1; i+1 < len(b) && (i-1)/64 < min(len(masks), (len(b)-2)/64); i++ {
			want := anchorBit[b[i]]&(nearBefore[b[i-1]]|nearAfter[b[i+1]]) != 0
			if got := masks[(i-1)/64]>>((i-1)%64)&1 != 0; got != want {
				t.Fatalf("byte %d of %q (%q before, %q after): got %v, want %v", i, b, b[i-1], b[i+1], got, want)
			}
		}
	}
}
