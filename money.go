package muster

import (
	"math"
	"strconv"
	"strings"
)

// FormatUSD prints micro-dollars for people, the one way every view,
// report and message does: "$1,234.56" (cents, thousands grouped), and
// below a cent four decimals ("$0.0042"), so a cheap task is not shown as
// free. Negative amounts get a leading minus ("-$0.42"). Integer
// arithmetic: no float rounding surprises.
func FormatUSD(micros int64) string {
	sign := ""
	if micros < 0 {
		sign = "-"
		if micros == minInt64 {
			micros++ // one micro-dollar off at the very edge, not an overflow
		}
		micros = -micros
	}
	if micros != 0 && micros < 10_000 {
		tenths := (micros + 50) / 100 // units of $0.0001; micros < 10,000 here
		return sign + "$0." + pad(tenths, 4)
	}
	cents := micros/10_000 + (micros%10_000+5_000)/10_000 // rounded, without overflow
	return sign + "$" + Group(cents/100) + "." + pad(cents%100, 2)
}

// FormatUSDPrecise prints micro-dollars with four decimals ("$0.0110",
// "$1,234.5600"), for messages where a cent is too coarse: budget limits
// and what was spent against them.
func FormatUSDPrecise(micros int64) string {
	sign := ""
	if micros < 0 {
		sign = "-"
		if micros == minInt64 {
			micros++
		}
		micros = -micros
	}
	units := micros/100 + (micros%100+50)/100 // of $0.0001, rounded
	return sign + "$" + Group(units/10_000) + "." + pad(units%10_000, 4)
}

const minInt64 = -1 << 63

// MicrosOfUSD converts dollars (as status --json prints them) back to
// micro-dollars, rounded; non-finite or out-of-range values give 0.
func MicrosOfUSD(usd float64) int64 {
	m := math.Round(usd * 1e6)
	if math.IsNaN(m) || m > math.MaxInt64/2 || m < math.MinInt64/2 {
		return 0
	}
	return int64(m)
}

// Group prints n with commas between thousands: 1234567 is "1,234,567".
func Group(n int64) string {
	if n < 0 {
		if n == minInt64 {
			return "-9,223,372,036,854,775,808"
		}
		return "-" + Group(-n)
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	b.Grow(len(s) + len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func pad(n int64, width int) string {
	s := strconv.FormatInt(n, 10)
	if len(s) < width {
		s = strings.Repeat("0", width-len(s)) + s
	}
	return s
}
