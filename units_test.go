package consult

import (
	"testing"
	"time"
)

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

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 seconds"},
		{40 * time.Millisecond, "0 seconds"},
		{200 * time.Millisecond, "0.2 seconds"},
		{time.Second, "1 second"},
		{1040 * time.Millisecond, "1 second"},
		{1500 * time.Millisecond, "1.5 seconds"},
		{22 * time.Second, "22 seconds"},
		{10200 * time.Millisecond, "10.2 seconds"},
		{59949 * time.Millisecond, "59.9 seconds"},
		{90*time.Second + 400*time.Millisecond, "90 seconds"},
		{600 * time.Second, "600 seconds"},
		{601 * time.Second, "10 minutes"},
		{time.Hour, "60 minutes"},
		{90 * time.Minute, "90 minutes"},
		{2 * time.Hour, "2 hours"},
		{26*time.Hour + 20*time.Minute, "26 hours"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
