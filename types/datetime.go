package types

import (
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // named zones read on a host without zone files too (Go prefers the host's)

	"github.com/fvsql/fvsql/pgerror"
)

// unixToPGEpochDays is the number of days from 1970-01-01 to 2000-01-01,
// PostgreSQL's binary epoch.
const unixToPGEpochDays = 10957

// unixToPGEpochMicros is the same distance in microseconds.
const unixToPGEpochMicros = unixToPGEpochDays * MicrosPerDay

// Bounds PostgreSQL accepts for timestamps: 4713 BC to 294276 AD. fvsql
// keeps years 1..9999, which every encoding here handles.
var (
	minTimestamp = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxTimestamp = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// TimeFromMicros converts Unix microseconds to a time.Time in UTC.
func TimeFromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// daysFromCivil converts a proleptic Gregorian date to days since
// 1970-01-01 (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return
}

// DaysInMonth is the number of days of month m (1-12) of year y in the
// proleptic Gregorian calendar.
func DaysInMonth(y, m int64) int64 {
	switch m {
	case 4, 6, 9, 11:
		return 30
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return 31
}

// FloorDiv is a / b rounded toward negative infinity (Go's / truncates
// toward zero): the window or day a microsecond count before 1970 lies in.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// appendDate appends YYYY-MM-DD.
func appendDate(buf []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	buf = appendPadded(buf, y, 4)
	buf = append(buf, '-')
	buf = appendPadded(buf, m, 2)
	buf = append(buf, '-')
	return appendPadded(buf, d, 2)
}

func appendPadded(buf []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		buf = append(buf, '0')
	}
	return append(buf, s...)
}

// appendClock appends HH:MM:SS[.ffffff] (trailing zeros of the fraction trimmed).
func appendClock(buf []byte, us int64) []byte {
	h := us / MicrosPerHour
	us -= h * MicrosPerHour
	mi := us / MicrosPerMinute
	us -= mi * MicrosPerMinute
	s := us / MicrosPerSecond
	us -= s * MicrosPerSecond
	buf = appendPadded(buf, h, 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, mi, 2)
	buf = append(buf, ':')
	buf = appendPadded(buf, s, 2)
	return appendFraction(buf, us)
}

func appendFraction(buf []byte, us int64) []byte {
	if us == 0 {
		return buf
	}
	var tmp [6]byte
	for i := 5; i >= 0; i-- {
		tmp[i] = byte('0' + us%10)
		us /= 10
	}
	n := 6
	for n > 0 && tmp[n-1] == '0' {
		n--
	}
	buf = append(buf, '.')
	return append(buf, tmp[:n]...)
}

// appendTimestamp appends PostgreSQL's ISO text form; sep is ' ' for
// PostgreSQL text and 'T' for ISO 8601 JSON.
func appendTimestamp(buf []byte, us int64, sep byte) []byte {
	days := FloorDiv(us, MicrosPerDay)
	buf = appendDate(buf, days)
	buf = append(buf, sep)
	return appendClock(buf, us-days*MicrosPerDay)
}

// ParseDate parses a date in ISO form (YYYY-MM-DD), optionally followed by
// a time which is ignored, and returns days since the Unix epoch.
func ParseDate(s string) (int64, error) {
	s = strings.TrimSpace(s)
	days, rest, ok := scanDate(s)
	if !ok {
		if us, err := ParseTimestamp(s, false); err == nil {
			return FloorDiv(us, MicrosPerDay), nil
		}
		return 0, pgerror.New(pgerror.InvalidDatetimeFormat, "invalid input syntax for type date: %q", s)
	}
	if rest != "" {
		if _, err := ParseTimestamp(s, false); err != nil {
			return 0, pgerror.New(pgerror.InvalidDatetimeFormat, "invalid input syntax for type date: %q", s)
		}
	}
	return days, nil
}

func scanDigits(s string, min, max int) (int64, string, bool) {
	n := 0
	var v int64
	for n < len(s) && n < max && s[n] >= '0' && s[n] <= '9' {
		v = v*10 + int64(s[n]-'0')
		n++
	}
	if n < min {
		return 0, s, false
	}
	return v, s[n:], true
}

// scanDate reads YYYY-MM-DD from the start of s.
func scanDate(s string) (days int64, rest string, ok bool) {
	y, s, ok := scanDigits(s, 4, 6)
	if !ok || len(s) == 0 || s[0] != '-' {
		return 0, s, false
	}
	m, s, ok := scanDigits(s[1:], 1, 2)
	if !ok || len(s) == 0 || s[0] != '-' {
		return 0, s, false
	}
	d, s, ok := scanDigits(s[1:], 1, 2)
	if !ok || m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m) {
		return 0, s, false
	}
	return daysFromCivil(y, m, d), s, true
}

// ParseTimestamp parses the timestamp forms PostgreSQL and ISO 8601 use:
// "2026-01-01", "2026-01-01 09:00:00", "2026-01-01T09:00:00.123Z",
// "2026-01-01 09:00:00+02", "…+05:30", and the words epoch, now. A zone
// offset is applied when tz is true (timestamptz) and ignored otherwise,
// as PostgreSQL does for timestamp without time zone.
func ParseTimestamp(s string, tz bool) (int64, error) {
	us, ok := parseTimestamp(strings.TrimSpace(s), tz)
	if !ok {
		typ := "timestamp"
		if tz {
			typ = "timestamp with time zone"
		}
		return 0, pgerror.New(pgerror.InvalidDatetimeFormat, "invalid input syntax for type %s: %q", typ, s)
	}
	if us < minTimestamp || us > maxTimestamp {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "timestamp out of range: %q", s)
	}
	return us, nil
}

func parseTimestamp(s string, tz bool) (int64, bool) {
	if s != "" && (s[0] < '0' || s[0] > '9') { // the special words; digits are the hot path
		switch {
		case strings.EqualFold(s, "epoch"):
			return 0, true
		case strings.EqualFold(s, "now"):
			return time.Now().UnixMicro(), true
		case strings.EqualFold(s, "today"):
			return FloorDiv(time.Now().UnixMicro(), MicrosPerDay) * MicrosPerDay, true
		}
	}
	days, s, ok := scanDate(s)
	if !ok {
		return 0, false
	}
	us := days * MicrosPerDay
	if s == "" {
		return us, true
	}
	if s[0] != ' ' && s[0] != 'T' && s[0] != 't' {
		return 0, false
	}
	s = strings.TrimLeft(s[1:], " ")
	h, s, ok := scanDigits(s, 1, 2)
	if !ok || len(s) == 0 || s[0] != ':' {
		return 0, false
	}
	mi, s, ok := scanDigits(s[1:], 2, 2)
	if !ok {
		return 0, false
	}
	var sec, frac int64
	if len(s) > 0 && s[0] == ':' {
		sec, s, ok = scanDigits(s[1:], 2, 2)
		if !ok {
			return 0, false
		}
		if len(s) > 0 && s[0] == '.' {
			s = s[1:]
			n := 0
			for n < len(s) && s[n] >= '0' && s[n] <= '9' {
				if n < 6 {
					frac = frac*10 + int64(s[n]-'0')
				} else if n == 6 && s[n] >= '5' {
					frac++ // round half up at the microsecond
				}
				n++
			}
			if n == 0 {
				return 0, false
			}
			for i := n; i < 6; i++ {
				frac *= 10
			}
			s = s[n:]
		}
	}
	if h > 24 || mi > 59 || sec > 60 || (h == 24 && (mi != 0 || sec != 0 || frac != 0)) {
		return 0, false
	}
	us += h*MicrosPerHour + mi*MicrosPerMinute + sec*MicrosPerSecond + frac
	s = strings.TrimLeft(s, " ")
	if s == "" {
		return us, true
	}
	off, loc, ok := parseZone(s)
	if !ok {
		return 0, false
	}
	if loc != nil {
		off = zoneOffset(loc, us)
	}
	if tz {
		us -= off
	}
	return us, true
}

// parseZone parses Z, UTC, GMT, +HH, +HHMM, +HH:MM and returns the offset
// in microseconds east of UTC, or a named zone (America/New_York), whose
// offset depends on the time.
func parseZone(s string) (int64, *time.Location, bool) {
	switch strings.ToUpper(s) {
	case "Z", "UTC", "GMT", "+00", "-00":
		return 0, nil, true
	}
	if s[0] != '+' && s[0] != '-' {
		if loc, err := time.LoadLocation(s); err == nil {
			return 0, loc, true
		}
		return 0, nil, false
	}
	sign := int64(1)
	if s[0] == '-' {
		sign = -1
	}
	h, rest, ok := scanDigits(s[1:], 1, 2)
	if !ok {
		return 0, nil, false
	}
	var m int64
	if len(rest) > 0 {
		if rest[0] == ':' {
			rest = rest[1:]
		}
		m, rest, ok = scanDigits(rest, 2, 2)
		if !ok {
			return 0, nil, false
		}
		if len(rest) > 0 && rest[0] == ':' { // seconds in the offset: accept and drop
			_, rest, ok = scanDigits(rest[1:], 2, 2)
			if !ok {
				return 0, nil, false
			}
		}
	}
	if rest != "" || h > 15 || m > 59 {
		return 0, nil, false
	}
	return sign * (h*MicrosPerHour + m*MicrosPerMinute), nil, true
}

// zoneOffset is the offset east of UTC, in microseconds, of zone loc at
// wall-clock time wall (Unix microseconds read as local time), as
// PostgreSQL reads a local time in a zone: where the clock ran twice (a
// change back, autumn's) it means the second time, after the change;
// where it never ran (a change forward) it takes the offset from before
// the change. Both offsets around wall are those a day before and after
// it, as no zone changes twice within two days.
func zoneOffset(loc *time.Location, wall int64) int64 {
	w := FloorDiv(wall, MicrosPerSecond)
	at := func(u int64) int64 {
		_, off := time.Unix(u, 0).In(loc).Zone()
		return int64(off)
	}
	before, after := at(w-86400), at(w+86400)
	if at(w-after) == after { // the clock shows wall under the later offset
		return after * MicrosPerSecond
	}
	return before * MicrosPerSecond
}
