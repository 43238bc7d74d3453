package figures

import "testing"

func TestFiguresReadForAPerson(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"count", Count(1234567), "1,234,567"},
		{"count small", Count(12), "12"},
		{"count negative", Count(-4210), "-4,210"},
		{"count rounds", Count(999.6), "1,000"},
		{"range", CountRange(1200, 1100, 1300), "1,200 (1,100-1,300)"},
		{"money large", Money(4210, 3900, 4560), "$4,210 (3,900-4,560)"},
		{"money cents", Money(12.5, 10, 15), "$12.50 (10.00-15.00)"},
		{"money small", Money(0.0123, 0.01, 0.015), "$0.0123 (0.0100-0.0150)"},
		{"dollars", Dollars(3.456), "$3.46"},
		{"dollars small", Dollars(0.00123), "$0.0012"},
		{"seconds", Hours(42), "42 s"},
		{"minutes", Hours(150), "2.5 min"},
		{"tens of minutes", Hours(1800), "30 min"},
		{"hours", Hours(5400), "1.5 h"},
		{"many hours", Hours(500 * 3600), "500 h"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}
