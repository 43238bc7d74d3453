// Package figures renders the figures of a plan for a person: whole
// numbers with thousands separators, costs, ranges and durations. distill
// plan's table and distill status's plan line read alike through it.
package figures

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Count renders a whole number with thousands separators.
func Count(v float64) string { return grouped(fmt.Sprintf("%.0f", v)) }

// Int renders n with thousands separators: 51,583.
func Int(n int64) string { return grouped(strconv.FormatInt(n, 10)) }

// grouped puts thousands separators into a decimal integer's digits.
func grouped(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// CountRange renders a figure with its interval: 1,200 (1,100-1,300).
func CountRange(value, low, high float64) string {
	return fmt.Sprintf("%s (%s-%s)", Count(value), Count(low), Count(high))
}

// Money renders a cost with its interval: $4,210 (3,900-4,560), with cents
// below $100 and four decimals below $1 (by the interval's top).
func Money(value, low, high float64) string {
	f := func(v float64) string {
		switch {
		case high < 1:
			return fmt.Sprintf("%.4f", v)
		case high < 100:
			return fmt.Sprintf("%.2f", v)
		}
		return Count(v)
	}
	return fmt.Sprintf("$%s (%s-%s)", f(value), f(low), f(high))
}

// Dollars renders one cost: cents from $1 up, four decimals below.
func Dollars(v float64) string {
	if v < 1 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

// Hours renders a duration: seconds, minutes or hours.
func Hours(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.0f s", sec)
	case d < 10*time.Minute:
		return fmt.Sprintf("%.1f min", d.Minutes())
	case d < time.Hour:
		return fmt.Sprintf("%.0f min", d.Minutes())
	case d < 100*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return fmt.Sprintf("%.0f h", d.Hours())
}
