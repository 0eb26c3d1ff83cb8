package consult

import "testing"

func TestBytesString(t *testing.T) {
	for _, tc := range []struct {
		in   Bytes
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{16 << 20, "16.0 MiB"}, {3 << 30, "3.0 GiB"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Bytes(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}

func TestTokensString(t *testing.T) {
	for _, tc := range []struct {
		in   Tokens
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-12345, "-12,345"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("Tokens(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
		}
	}
}
