package types

import (
	"math"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
)

// intervalUnits maps a unit word (singular, plural, abbreviated) to its
// length; months are kept apart because their length varies.
var intervalUnits = map[string]struct {
	months int64
	days   int64
	micros int64
}{
	"microsecond": {micros: 1}, "microseconds": {micros: 1}, "us": {micros: 1}, "usec": {micros: 1}, "usecs": {micros: 1},
	"millisecond": {micros: 1000}, "milliseconds": {micros: 1000}, "ms": {micros: 1000}, "msec": {micros: 1000}, "msecs": {micros: 1000},
	"second": {micros: MicrosPerSecond}, "seconds": {micros: MicrosPerSecond}, "s": {micros: MicrosPerSecond}, "sec": {micros: MicrosPerSecond}, "secs": {micros: MicrosPerSecond},
	"minute": {micros: MicrosPerMinute}, "minutes": {micros: MicrosPerMinute}, "m": {micros: MicrosPerMinute}, "min": {micros: MicrosPerMinute}, "mins": {micros: MicrosPerMinute},
	"hour": {micros: MicrosPerHour}, "hours": {micros: MicrosPerHour}, "h": {micros: MicrosPerHour}, "hr": {micros: MicrosPerHour}, "hrs": {micros: MicrosPerHour},
	"day": {days: 1}, "days": {days: 1}, "d": {days: 1},
	"week": {days: 7}, "weeks": {days: 7}, "w": {days: 7},
	"month": {months: 1}, "months": {months: 1}, "mon": {months: 1}, "mons": {months: 1},
	"year": {months: 12}, "years": {months: 12}, "y": {months: 12}, "yr": {months: 12}, "yrs": {months: 12},
}

// ParseInterval parses PostgreSQL interval input: "4 seconds", "1 day
// 02:00:00", "-1 hour 30 minutes", "00:00:04.5", "1.5 minutes", ISO 8601
// "PT4S". A bare number takes defaultUnit (from INTERVAL '4' SECOND); an
// empty defaultUnit means seconds.
func ParseInterval(s, defaultUnit string) (IntervalValue, error) {
	iv, ok := parseInterval(strings.TrimSpace(s), strings.ToLower(defaultUnit))
	if !ok {
		return IntervalValue{}, pgerror.New(pgerror.InvalidDatetimeFormat, "invalid input syntax for type interval: %q", s)
	}
	return iv, nil
}

func parseInterval(s, defUnit string) (IntervalValue, bool) {
	if s == "" {
		return IntervalValue{}, false
	}
	if s[0] == 'P' || s[0] == 'p' {
		return parseISOInterval(s[1:])
	}
	s = strings.TrimPrefix(s, "@")
	ago := false
	fields := strings.Fields(strings.ToLower(s))
	if n := len(fields); n > 0 && fields[n-1] == "ago" {
		ago = true
		fields = fields[:n-1]
	}
	var months, days float64
	var micros float64
	sawAny := false
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if strings.Contains(f, ":") {
			us, ok := parseClockInterval(f)
			if !ok {
				return IntervalValue{}, false
			}
			micros += float64(us)
			sawAny = true
			continue
		}
		// A number, with its unit glued on ("4s") or as the next field.
		j := 0
		for j < len(f) && (f[j] == '-' || f[j] == '+' || f[j] == '.' || (f[j] >= '0' && f[j] <= '9')) {
			j++
		}
		if j == 0 {
			return IntervalValue{}, false
		}
		num, err := strconv.ParseFloat(f[:j], 64)
		if err != nil {
			return IntervalValue{}, false
		}
		unit := f[j:]
		if unit == "" {
			if i+1 < len(fields) {
				if _, ok := intervalUnits[fields[i+1]]; ok {
					unit = fields[i+1]
					i++
				}
			}
		}
		if unit == "" {
			unit = defUnit
			if unit == "" {
				unit = "second"
			}
		}
		u, ok := intervalUnits[unit]
		if !ok {
			return IntervalValue{}, false
		}
		months += num * float64(u.months)
		days += num * float64(u.days)
		micros += num * float64(u.micros)
		sawAny = true
	}
	if !sawAny {
		return IntervalValue{}, false
	}
	// Fractions cascade down as PostgreSQL does: 1.5 months = 1 month 15 days.
	wholeMonths := math.Trunc(months)
	days += (months - wholeMonths) * 30
	wholeDays := math.Trunc(days)
	micros += (days - wholeDays) * float64(MicrosPerDay)
	iv := IntervalValue{Months: int32(wholeMonths), Days: int32(wholeDays), Micros: int64(math.Round(micros))}
	if ago {
		iv = iv.Neg()
	}
	return iv, true
}

func parseClockInterval(f string) (int64, bool) {
	neg := false
	if f[0] == '-' {
		neg = true
		f = f[1:]
	} else if f[0] == '+' {
		f = f[1:]
	}
	parts := strings.Split(f, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	m, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	us := h*MicrosPerHour + m*MicrosPerMinute
	if len(parts) == 3 {
		sec, err := strconv.ParseFloat(parts[2], 64)
		if err != nil {
			return 0, false
		}
		us += int64(math.Round(sec * float64(MicrosPerSecond)))
	}
	if neg {
		us = -us
	}
	return us, true
}

func parseISOInterval(s string) (IntervalValue, bool) {
	var iv IntervalValue
	inTime := false
	for len(s) > 0 {
		if s[0] == 'T' || s[0] == 't' {
			inTime = true
			s = s[1:]
			continue
		}
		j := 0
		for j < len(s) && (s[j] == '-' || s[j] == '.' || (s[j] >= '0' && s[j] <= '9')) {
			j++
		}
		if j == 0 || j == len(s) {
			return iv, false
		}
		n, err := strconv.ParseFloat(s[:j], 64)
		if err != nil {
			return iv, false
		}
		switch s[j] | 0x20 {
		case 'y':
			iv.Months += int32(n * 12)
		case 'm':
			if inTime {
				iv.Micros += int64(n * float64(MicrosPerMinute))
			} else {
				iv.Months += int32(n)
			}
		case 'w':
			iv.Days += int32(n * 7)
		case 'd':
			iv.Days += int32(n)
		case 'h':
			iv.Micros += int64(n * float64(MicrosPerHour))
		case 's':
			iv.Micros += int64(math.Round(n * float64(MicrosPerSecond)))
		default:
			return iv, false
		}
		s = s[j+1:]
	}
	return iv, true
}

// Neg returns -iv.
func (iv IntervalValue) Neg() IntervalValue {
	return IntervalValue{Months: -iv.Months, Days: -iv.Days, Micros: -iv.Micros}
}

// appendInterval appends PostgreSQL's "postgres" interval style:
// "1 year 2 mons 3 days 04:05:06.5".
func appendInterval(buf []byte, iv IntervalValue) []byte {
	start := len(buf)
	years, months := iv.Months/12, iv.Months%12
	unit := func(n int64, one, many string) {
		if n == 0 {
			return
		}
		if len(buf) > start {
			buf = append(buf, ' ')
		}
		buf = strconv.AppendInt(buf, n, 10)
		buf = append(buf, ' ')
		if n == 1 { // PostgreSQL: "-1 days", "1 day"
			buf = append(buf, one...)
		} else {
			buf = append(buf, many...)
		}
	}
	unit(int64(years), "year", "years")
	unit(int64(months), "mon", "mons")
	unit(int64(iv.Days), "day", "days")
	if iv.Micros != 0 || len(buf) == start {
		if len(buf) > start {
			buf = append(buf, ' ')
		}
		us := iv.Micros
		if us < 0 {
			buf = append(buf, '-')
			us = -us
		}
		buf = appendClock(buf, us)
	}
	return buf
}
