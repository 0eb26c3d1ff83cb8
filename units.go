package consult

import (
	"fmt"
	"strconv"
	"time"
)

// Bytes is a size in bytes. It prints as a short human figure ("12.3 KiB").
type Bytes int64

// String formats b with a binary unit: "512 B", "12.3 KiB", "4.0 MiB".
func (b Bytes) String() string {
	const unit = 1024
	if b < unit && b > -unit {
		return fmt.Sprintf("%d B", int64(b))
	}
	f := float64(b)
	for _, u := range []string{"KiB", "MiB", "GiB"} {
		f /= unit
		if f < unit && f > -unit {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%.1f TiB", f/unit)
}

// Tokens is a count of model tokens. It prints with thousands separators ("12,345").
type Tokens int64

// String formats t with thousands separators.
func (t Tokens) String() string { return Thousands(int64(t)) }

// Thousands formats n with commas between groups of three digits: 1234567 -> "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := false
	if n < 0 {
		neg, s = true, s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		out = append(out, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// FormatDuration says a duration the one way every message of consult does: in seconds up
// to ten minutes, the unit callers give timeouts in ("1 second", "22 seconds", "0.2 seconds",
// "10.5 seconds": tenths below a minute, whole seconds from a minute on), then in whole
// minutes ("45 minutes") up to two hours, then in whole hours ("26 hours").
func FormatDuration(d time.Duration) string {
	switch {
	case d >= 2*time.Hour:
		return plural(d.Round(time.Hour).Hours(), "hour")
	case d > 10*time.Minute:
		return plural(d.Round(time.Minute).Minutes(), "minute")
	case d >= time.Minute:
		d = d.Round(time.Second)
	default:
		d = d.Round(100 * time.Millisecond)
	}
	return plural(d.Seconds(), "second")
}

func plural(n float64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatFloat(n, 'f', -1, 64) + " " + unit + "s"
}
