package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// to_char(timestamp, text) and to_timestamp(text, text) with
// PostgreSQL's template patterns, the common ones: YYYY YY MM DD HH24
// HH12 HH MI SS MS US AM PM A.M. P.M. (either case) Mon MON mon Month
// MONTH month Dy DY dy Day DAY day TZ tz, the FM prefix (no padding),
// "quoted text" and any other character as itself. The session time
// zone is UTC, so timestamptz prints as UTC ("UTC" for TZ). Other
// patterns (D, DDD, J, Q, WW, IYYY, TZH…) are refused with 0A000 rather
// than printed as text.

// fmtPatterns in the order they are tried: longer before their prefixes.
var fmtPatterns = []string{"YYYY", "HH24", "HH12", "MONTH", "Month", "month", "A.M.", "P.M.", "a.m.", "p.m.",
	"DAY", "Day", "day", "MON", "Mon", "mon", "YY", "MM", "DD", "HH", "MI", "SS", "MS", "US", "AM", "PM", "am", "pm",
	"DY", "Dy", "dy", "TZ", "tz"}

// unsupportedPatterns are PostgreSQL's other patterns: refused, not
// printed as literal text.
var unsupportedPatterns = []string{"IYYY", "TZH", "TZM", "SSSS", "DDD", "IDDD", "WW", "IW", "CC", "Y,YYY", "YYY", "BC", "AD", "OF", "RM", "rm", "Q", "J", "D"}

type fmtToken struct {
	pat     string // "" for literal text
	literal string
	fm      bool
}

func parseFormat(f string) ([]fmtToken, error) {
	var toks []fmtToken
	for i := 0; i < len(f); {
		fm := false
		if strings.HasPrefix(f[i:], "FM") {
			fm, i = true, i+2
		}
		if i < len(f) && f[i] == '"' {
			j := strings.IndexByte(f[i+1:], '"')
			if j < 0 {
				j = len(f) - i - 1
			}
			toks = append(toks, fmtToken{literal: f[i+1 : i+1+j]})
			i += j + 2
			continue
		}
		matched := ""
		for _, p := range fmtPatterns {
			if strings.HasPrefix(f[i:], p) {
				matched = p
				break
			}
		}
		for _, p := range unsupportedPatterns {
			if len(p) > len(matched) && strings.HasPrefix(f[i:], p) {
				return nil, pgerror.New(pgerror.FeatureNotSupported, "template pattern %q is not supported yet", p)
			}
		}
		if matched == "" {
			if i < len(f) {
				toks = append(toks, fmtToken{literal: f[i : i+1]})
				i++
			}
			continue
		}
		toks = append(toks, fmtToken{pat: matched, fm: fm})
		i += len(matched)
	}
	return toks, nil
}

func casePattern(p, s string) string {
	switch {
	case p == strings.ToUpper(p):
		return strings.ToUpper(s)
	case p == strings.ToLower(p):
		return strings.ToLower(s)
	}
	return s
}

// toChar formats a timestamp (microseconds since the epoch, UTC).
func toChar(micros int64, format string, tz bool) (string, error) {
	toks, err := parseFormat(format)
	if err != nil {
		return "", err
	}
	t := time.UnixMicro(micros).UTC()
	var b strings.Builder
	num := func(n, width int, fm bool) {
		if fm {
			b.WriteString(strconv.Itoa(n))
		} else {
			fmt.Fprintf(&b, "%0*d", width, n)
		}
	}
	for _, k := range toks {
		if k.pat == "" {
			b.WriteString(k.literal)
			continue
		}
		h12 := t.Hour() % 12
		if h12 == 0 {
			h12 = 12
		}
		switch k.pat {
		case "YYYY":
			num(t.Year(), 4, k.fm)
		case "YY":
			num(t.Year()%100, 2, k.fm)
		case "MM":
			num(int(t.Month()), 2, k.fm)
		case "DD":
			num(t.Day(), 2, k.fm)
		case "HH24":
			num(t.Hour(), 2, k.fm)
		case "HH12", "HH":
			num(h12, 2, k.fm)
		case "MI":
			num(t.Minute(), 2, k.fm)
		case "SS":
			num(t.Second(), 2, k.fm)
		case "MS":
			num(t.Nanosecond()/1e6, 3, k.fm)
		case "US":
			num(t.Nanosecond()/1e3, 6, k.fm)
		case "AM", "PM", "am", "pm", "A.M.", "P.M.", "a.m.", "p.m.":
			m := "AM"
			if t.Hour() >= 12 {
				m = "PM"
			}
			if strings.Contains(k.pat, ".") {
				m = m[:1] + "." + m[1:] + "."
			}
			b.WriteString(casePattern(k.pat, m))
		case "MONTH", "Month", "month":
			s := casePattern(k.pat, t.Month().String())
			if !k.fm {
				s = fmt.Sprintf("%-9s", s)
			}
			b.WriteString(s)
		case "MON", "Mon", "mon":
			b.WriteString(casePattern(k.pat, t.Month().String()[:3]))
		case "DAY", "Day", "day":
			s := casePattern(k.pat, t.Weekday().String())
			if !k.fm {
				s = fmt.Sprintf("%-9s", s)
			}
			b.WriteString(s)
		case "DY", "Dy", "dy":
			b.WriteString(casePattern(k.pat, t.Weekday().String()[:3]))
		case "TZ", "tz":
			if tz {
				b.WriteString(casePattern(k.pat, "UTC"))
			}
		}
	}
	return b.String(), nil
}

func badDatetime(format string, args ...any) error {
	return pgerror.New(pgerror.InvalidDatetimeFormat, format, args...)
}

// toTimestamp parses s by the template (to_timestamp(text, text)): the
// result is in UTC, the session time zone. As in PostgreSQL, spaces in
// the input before a field are skipped, a literal character of the
// template skips one character of the input, and a field that does not
// match fails with 22007.
func toTimestamp(s, format string) (int64, error) {
	toks, err := parseFormat(format)
	if err != nil {
		return 0, err
	}
	year, month, day, hour, minute, sec, micro := 1, 1, 1, 0, 0, 0, 0
	pm, h12 := -1, false
	i := 0
	digits := func(pat string, max int, fm bool) (int, error) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		j := i
		if j < len(s) && (s[j] == '-' || s[j] == '+') && pat == "YYYY" {
			j++
		}
		for j < len(s) && j-i < max && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i {
			if i >= len(s) {
				return 0, badDatetime("source string too short for %q formatting field", pat)
			}
			return 0, badDatetime("invalid value %q for %q", s[i:min(len(s), i+max)], pat)
		}
		n, _ := strconv.Atoi(s[i:j])
		if pat == "MS" {
			for k := j - i; k < 3; k++ {
				n *= 10
			}
		}
		if pat == "US" {
			for k := j - i; k < 6; k++ {
				n *= 10
			}
		}
		i = j
		return n, nil
	}
	word := func(pat string, names []string, abbrev bool) (int, error) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		for n, name := range names {
			if abbrev {
				name = name[:3]
			}
			if len(s)-i >= len(name) && strings.EqualFold(s[i:i+len(name)], name) {
				i += len(name)
				return n, nil
			}
		}
		return 0, badDatetime("invalid value %q for %q", s[i:min(len(s), i+3)], pat)
	}
	months := make([]string, 12)
	for m := range months {
		months[m] = time.Month(m + 1).String()
	}
	daysOfWeek := make([]string, 7)
	for d := range daysOfWeek {
		daysOfWeek[d] = time.Weekday(d).String()
	}
	for _, k := range toks {
		var err error
		switch k.pat {
		case "":
			// a literal skips as many input characters (a space matches
			// any run of spaces)
			for range len(k.literal) {
				if i < len(s) {
					i++
				}
			}
			if k.literal == " " {
				for i < len(s) && s[i] == ' ' {
					i++
				}
			}
		case "YYYY":
			year, err = digits(k.pat, 4, k.fm)
		case "YY":
			year, err = digits(k.pat, 2, k.fm)
			if err == nil {
				if year < 70 {
					year += 2000
				} else {
					year += 1900
				}
			}
		case "MM":
			month, err = digits(k.pat, 2, k.fm)
		case "DD":
			day, err = digits(k.pat, 2, k.fm)
		case "HH24":
			hour, err = digits(k.pat, 2, k.fm)
		case "HH12", "HH":
			hour, err = digits(k.pat, 2, k.fm)
			h12 = true
		case "MI":
			minute, err = digits(k.pat, 2, k.fm)
		case "SS":
			sec, err = digits(k.pat, 2, k.fm)
		case "MS":
			micro, err = digits(k.pat, 3, k.fm)
			micro *= 1000
		case "US":
			micro, err = digits(k.pat, 6, k.fm)
		case "AM", "PM", "am", "pm", "A.M.", "P.M.", "a.m.", "p.m.":
			names := []string{"AM", "PM"}
			if strings.Contains(k.pat, ".") {
				names = []string{"A.M.", "P.M."}
			}
			pm, err = word(k.pat, names, false)
			h12 = true
		case "MONTH", "Month", "month":
			month, err = word(k.pat, months, false)
			month++
		case "MON", "Mon", "mon":
			month, err = word(k.pat, months, true)
			month++
		case "DAY", "Day", "day":
			_, err = word(k.pat, daysOfWeek, false)
		case "DY", "Dy", "dy":
			_, err = word(k.pat, daysOfWeek, true)
		case "TZ", "tz":
			return 0, pgerror.New(pgerror.FeatureNotSupported, "formatting field %q is only supported in to_char", k.pat)
		}
		if err != nil {
			return 0, err
		}
	}
	if h12 {
		if hour < 1 || hour > 12 {
			return 0, pgerror.New(pgerror.InvalidDatetimeFormat, "hour \"%d\" is invalid for the 12-hour clock", hour)
		}
		hour %= 12
		if pm == 1 {
			hour += 12
		}
	}
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 60 {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "date/time field value out of range: %q", s)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, micro*1000, time.UTC)
	if t.Day() != day {
		return 0, pgerror.New(pgerror.DatetimeFieldOverflow, "date/time field value out of range: %q", s)
	}
	return t.UnixMicro(), nil
}

func init() {
	text, ts, tz := types.Text, types.Timestamp, types.TimestampTZ
	Register(
		&Func{Name: "to_timestamp", Args: tt(text, text), Ret: tz, Eval2: func(a, f types.Value) (types.Value, error) {
			m, err := toTimestamp(a.S, f.S)
			if err != nil {
				return types.NullValue, err
			}
			return types.NewTimestamp(tz, m), nil
		}},
		&Func{Name: "to_char", Args: tt(ts, text), Ret: text, Eval2: func(a, f types.Value) (types.Value, error) {
			s, err := toChar(a.Micros(), f.S, false)
			return types.NewText(s), err
		}},
		&Func{Name: "to_char", Args: tt(tz, text), Ret: text, Eval2: func(a, f types.Value) (types.Value, error) {
			s, err := toChar(a.Micros(), f.S, true)
			return types.NewText(s), err
		}},
	)
}
