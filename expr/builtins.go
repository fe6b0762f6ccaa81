package expr

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

var errNegativeLength = pgerror.New(pgerror.SubstringError, "negative substring length not allowed")

// absInt is abs for the integer types, keeping the argument's type.
func absInt(a types.Value) (types.Value, error) {
	if a.I < 0 {
		return negInt(a.K, a.I)
	}
	return a, nil
}

func textFn(name string, fn func(s string) string) *Func {
	return &Func{Name: name, Args: []types.Type{types.Text}, Ret: types.Text,
		Eval1: func(a types.Value) (types.Value, error) { return types.NewText(fn(a.S)), nil }}
}

func fn(name string, args []types.Type, ret types.Type, eval func(a []types.Value) (types.Value, error)) *Func {
	return &Func{Name: name, Args: args, Ret: ret, Eval: eval}
}

func tt(ts ...types.Type) []types.Type { return ts }

// runeOffset is the byte offset in s of its character n (0-based; len(s)
// past the end). Character functions walk the string rather than convert
// it to []rune, which would take four times its size.
func runeOffset(s string, n int64) int {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i
}

func runeSlice(s string, from, count int64, hasCount bool) string {
	start := max(from-1, 0)
	if hasCount {
		end := from - 1 + count
		if end <= start {
			return ""
		}
		i := runeOffset(s, start)
		return s[i : i+runeOffset(s[i:], end-start)]
	}
	return s[runeOffset(s, start):]
}

// pad is lpad (left) or rpad: s filled with repetitions of fill to n
// characters, or cut to n when longer. The result's size is computed,
// and checked against the limit, before it is built.
func pad(s string, n int64, fill string, left bool) (string, error) {
	if n <= 0 {
		return "", nil
	}
	have := int64(utf8.RuneCountInString(s))
	if have >= n {
		return s[:runeOffset(s, n)], nil
	}
	if fill == "" {
		return s, nil
	}
	m := n - have // characters to add
	per := int64(utf8.RuneCountInString(fill))
	whole, part := m/per, fill[:runeOffset(fill, m%per)]
	size := int64(len(s)) + whole*int64(len(fill)) + int64(len(part))
	if size > maxValueBytes {
		return "", errLengthTooLarge
	}
	var sb strings.Builder
	sb.Grow(int(size))
	if !left {
		sb.WriteString(s)
	}
	for range whole {
		sb.WriteString(fill)
	}
	sb.WriteString(part)
	if left {
		sb.WriteString(s)
	}
	return sb.String(), nil
}

func padFn(left bool) func(a []types.Value) (types.Value, error) {
	return func(a []types.Value) (types.Value, error) {
		fill := " "
		if len(a) > 2 {
			fill = a[2].S
		}
		s, err := pad(a[0].S, a[1].I, fill, left)
		if err != nil {
			return types.NullValue, err
		}
		return types.NewText(s), nil
	}
}

// replace is replace(s, from, to): an empty from replaces nothing, as in
// PostgreSQL (Go's ReplaceAll would insert to between every character).
func replace(s, from, to string) (types.Value, error) {
	if from == "" {
		return types.NewText(s), nil
	}
	n := int64(strings.Count(s, from))
	if n == 0 {
		return types.NewText(s), nil
	}
	if err := checkSize("replace", int64(len(s))+n*(int64(len(to))-int64(len(from)))); err != nil {
		return types.NullValue, err
	}
	return types.NewText(strings.ReplaceAll(s, from, to)), nil
}

// truncTime truncates microseconds to a date_trunc field.
func truncTime(field string, us int64) (int64, error) {
	t := types.TimeFromMicros(us)
	var r time.Time
	switch strings.ToLower(field) {
	case "microseconds":
		return us, nil
	case "milliseconds":
		return floorDiv(us, 1000) * 1000, nil
	case "second":
		r = t.Truncate(time.Second)
	case "minute":
		r = t.Truncate(time.Minute)
	case "hour":
		r = t.Truncate(time.Hour)
	case "day":
		r = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	case "week":
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		wd := (int(d.Weekday()) + 6) % 7
		r = d.AddDate(0, 0, -wd)
	case "month":
		r = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case "quarter":
		r = time.Date(t.Year(), time.Month((int(t.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC)
	case "year":
		r = time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
	default:
		return 0, pgerror.New(pgerror.InvalidParameterValue, "unit %q not recognized for type timestamp", field)
	}
	return r.UnixMicro(), nil
}

// extract implements EXTRACT/date_part for timestamps.
func extract(field string, us int64) (float64, error) {
	t := types.TimeFromMicros(us)
	switch strings.ToLower(field) {
	case "epoch":
		return float64(us) / 1e6, nil
	case "year":
		return float64(t.Year()), nil
	case "quarter":
		return float64((int(t.Month())-1)/3 + 1), nil
	case "month":
		return float64(t.Month()), nil
	case "week":
		_, w := t.ISOWeek()
		return float64(w), nil
	case "day":
		return float64(t.Day()), nil
	case "doy":
		return float64(t.YearDay()), nil
	case "dow":
		return float64(t.Weekday()), nil
	case "isodow":
		return float64((int(t.Weekday())+6)%7 + 1), nil
	case "hour":
		return float64(t.Hour()), nil
	case "minute":
		return float64(t.Minute()), nil
	case "second":
		return float64(t.Second()) + float64(t.Nanosecond())/1e9, nil
	case "milliseconds":
		return float64(t.Second())*1e3 + float64(t.Nanosecond())/1e6, nil
	case "microseconds":
		return float64(t.Second())*1e6 + float64(t.Nanosecond())/1e3, nil
	}
	return 0, pgerror.New(pgerror.InvalidParameterValue, "unit %q not recognized for type timestamp", field)
}

// extractNumeric is EXTRACT, which returns numeric: fields with a
// fraction (epoch, second, milliseconds) are computed exactly from the
// microseconds, with PostgreSQL's scale, not through float64.
func extractNumeric(field string, us int64) (types.Value, error) {
	t := types.TimeFromMicros(us)
	secUS := int64(t.Second())*1_000_000 + int64(t.Nanosecond()/1000)
	switch strings.ToLower(field) {
	case "epoch":
		return types.NewNumeric(apd.New(us, -6)), nil
	case "second":
		return types.NewNumeric(apd.New(secUS, -6)), nil
	case "milliseconds":
		return types.NewNumeric(apd.New(secUS, -3)), nil
	case "microseconds":
		return types.NewNumeric(apd.New(secUS, 0)), nil
	}
	f, err := extract(field, us)
	if err != nil {
		return types.NullValue, err
	}
	return types.NewNumeric(apd.New(int64(f), 0)), nil
}

func roundDecimal(d *apd.Decimal, places int32) (types.Value, error) {
	r := new(apd.Decimal)
	ctx := *types.DecimalContext
	ctx.Rounding = apd.RoundHalfUp
	if _, err := ctx.Quantize(r, d, -places); err != nil {
		return types.NullValue, pgerror.New(pgerror.NumericValueOutOfRange, "numeric value out of range")
	}
	return types.NewNumeric(r), nil
}

func init() {
	text, i4, i8, f8, num, b := types.Text, types.Int4, types.Int8, types.Float8, types.Numeric, types.Bool
	ts, tz, iv := types.Timestamp, types.TimestampTZ, types.Interval
	fs := []*Func{
		textFn("upper", strings.ToUpper), textFn("lower", strings.ToLower),
		textFn("btrim", func(s string) string { return strings.Trim(s, " ") }),
		textFn("trim", func(s string) string { return strings.Trim(s, " ") }),
		textFn("ltrim", func(s string) string { return strings.TrimLeft(s, " ") }),
		textFn("rtrim", func(s string) string { return strings.TrimRight(s, " ") }),
		textFn("reverse", func(s string) string {
			b := make([]byte, len(s))
			for i, j := 0, len(s); i < len(s); {
				_, w := utf8.DecodeRuneInString(s[i:])
				j -= w
				copy(b[j:], s[i:i+w])
				i += w
			}
			return string(b)
		}),
		textFn("md5", func(s string) string { h := md5.Sum([]byte(s)); return hex.EncodeToString(h[:]) }),
		textFn("initcap", func(s string) string {
			prev := false
			return strings.Map(func(r rune) rune {
				alnum := unicode.IsLetter(r) || unicode.IsDigit(r)
				defer func() { prev = alnum }()
				if !prev {
					return unicode.ToUpper(r)
				}
				return unicode.ToLower(r)
			}, s)
		}),
		fn("btrim", tt(text, text), text, func(a []types.Value) (types.Value, error) { return types.NewText(strings.Trim(a[0].S, a[1].S)), nil }),
		fn("trim", tt(text, text), text, func(a []types.Value) (types.Value, error) { return types.NewText(strings.Trim(a[0].S, a[1].S)), nil }),
		fn("ltrim", tt(text, text), text, func(a []types.Value) (types.Value, error) {
			return types.NewText(strings.TrimLeft(a[0].S, a[1].S)), nil
		}),
		fn("rtrim", tt(text, text), text, func(a []types.Value) (types.Value, error) {
			return types.NewText(strings.TrimRight(a[0].S, a[1].S)), nil
		}),
		{Name: "length", Args: tt(text), Ret: i4, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewInt(i4, int64(utf8.RuneCountInString(a.S))), nil
		}},
		{Name: "char_length", Args: tt(text), Ret: i4, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewInt(i4, int64(utf8.RuneCountInString(a.S))), nil
		}},
		{Name: "octet_length", Args: tt(text), Ret: i4, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewInt(i4, int64(len(a.S))), nil
		}},
		{Name: "length", Args: tt(types.Bytea), Ret: i4, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewInt(i4, int64(len(a.S))), nil
		}},
		fn("substring", tt(text, i4), text, func(a []types.Value) (types.Value, error) {
			return types.NewText(runeSlice(a[0].S, a[1].I, 0, false)), nil
		}),
		fn("substring", tt(text, i4, i4), text, func(a []types.Value) (types.Value, error) {
			if a[2].I < 0 {
				return types.NullValue, errNegativeLength
			}
			return types.NewText(runeSlice(a[0].S, a[1].I, a[2].I, true)), nil
		}),
		fn("substring", tt(text, text), text, func(a []types.Value) (types.Value, error) {
			return regexSubstring(a[0].S, a[1].S)
		}),
		fn("substr", tt(text, i4), text, func(a []types.Value) (types.Value, error) {
			return types.NewText(runeSlice(a[0].S, a[1].I, 0, false)), nil
		}),
		fn("substr", tt(text, i4, i4), text, func(a []types.Value) (types.Value, error) {
			if a[2].I < 0 {
				return types.NullValue, errNegativeLength
			}
			return types.NewText(runeSlice(a[0].S, a[1].I, a[2].I, true)), nil
		}),
		fn("left", tt(text, i4), text, func(a []types.Value) (types.Value, error) {
			s, n := a[0].S, a[1].I
			if n < 0 {
				n = max(int64(utf8.RuneCountInString(s))+n, 0)
			}
			return types.NewText(s[:runeOffset(s, n)]), nil
		}),
		fn("right", tt(text, i4), text, func(a []types.Value) (types.Value, error) {
			s, n := a[0].S, a[1].I
			count := int64(utf8.RuneCountInString(s))
			if n < 0 {
				n = max(count+n, 0)
			}
			n = min(n, count)
			return types.NewText(s[runeOffset(s, count-n):]), nil
		}),
		fn("replace", tt(text, text, text), text, func(a []types.Value) (types.Value, error) {
			return replace(a[0].S, a[1].S, a[2].S)
		}),
		fn("repeat", tt(text, i4), text, func(a []types.Value) (types.Value, error) {
			if a[1].I <= 0 {
				return types.NewText(""), nil
			}
			if int64(len(a[0].S))*a[1].I > maxValueBytes {
				return types.NullValue, errLengthTooLarge
			}
			return types.NewText(strings.Repeat(a[0].S, int(a[1].I))), nil
		}),
		fn("chr", tt(i4), text, func(a []types.Value) (types.Value, error) {
			switch c := a[0].I; {
			case c < 0:
				return types.NullValue, pgerror.New(pgerror.ProgramLimitExceeded, "character number must be positive")
			case c == 0:
				return types.NullValue, pgerror.New(pgerror.ProgramLimitExceeded, "null character not permitted")
			case c > utf8.MaxRune:
				return types.NullValue, pgerror.New(pgerror.ProgramLimitExceeded, "requested character too large for encoding: %d", c)
			case !utf8.ValidRune(rune(c)):
				return types.NullValue, pgerror.New(pgerror.ProgramLimitExceeded, "requested character not valid for encoding: %d", c)
			default:
				return types.NewText(string(rune(c))), nil
			}
		}),
		fn("ascii", tt(text), i4, func(a []types.Value) (types.Value, error) {
			r, _ := utf8.DecodeRuneInString(a[0].S)
			if a[0].S == "" {
				r = 0
			}
			return types.NewInt(i4, int64(r)), nil
		}),
		fn("strpos", tt(text, text), i4, func(a []types.Value) (types.Value, error) {
			i := strings.Index(a[0].S, a[1].S)
			if i < 0 {
				return types.NewInt(i4, 0), nil
			}
			return types.NewInt(i4, int64(utf8.RuneCountInString(a[0].S[:i]))+1), nil
		}),
		fn("position", tt(text, text), i4, func(a []types.Value) (types.Value, error) {
			// position(substring IN string): arguments arrive as (substring, string)
			i := strings.Index(a[1].S, a[0].S)
			if i < 0 {
				return types.NewInt(i4, 0), nil
			}
			return types.NewInt(i4, int64(utf8.RuneCountInString(a[1].S[:i]))+1), nil
		}),
		fn("like_escape", tt(text, text), text, func(a []types.Value) (types.Value, error) {
			p, err := likeEscape(a[0].S, a[1].S)
			return types.NewText(p), err
		}),
		fn("starts_with", tt(text, text), b, func(a []types.Value) (types.Value, error) {
			return types.NewBool(strings.HasPrefix(a[0].S, a[1].S)), nil
		}),
		fn("split_part", tt(text, text, i4), text, func(a []types.Value) (types.Value, error) {
			s, d, n := a[0].S, a[1].S, a[2].I
			if n == 0 {
				return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "field position must not be zero")
			}
			if d == "" { // an empty delimiter does not split: s is the one field
				if n == 1 || n == -1 {
					return types.NewText(s), nil
				}
				return types.NewText(""), nil
			}
			if n < 0 {
				n += int64(strings.Count(s, d)) + 2
			}
			if n < 1 {
				return types.NewText(""), nil
			}
			// Walk to field n rather than split every field, which would
			// take a string header per field of a long text.
			for ; n > 1; n-- {
				i := strings.Index(s, d)
				if i < 0 {
					return types.NewText(""), nil
				}
				s = s[i+len(d):]
			}
			if i := strings.Index(s, d); i >= 0 {
				s = s[:i]
			}
			return types.NewText(s), nil
		}),
		fn("lpad", tt(text, i4), text, padFn(true)),
		fn("lpad", tt(text, i4, text), text, padFn(true)),
		fn("rpad", tt(text, i4), text, padFn(false)),
		fn("rpad", tt(text, i4, text), text, padFn(false)),
		{Name: "concat", Args: tt(Any), Variadic: true, Ret: text, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			sb := limitedBuilder{what: "concat"}
			for _, v := range a {
				if v.K != types.Null {
					if err := sb.add(v.Text()); err != nil {
						return types.NullValue, err
					}
				}
			}
			return types.NewText(sb.String()), nil
		}},
		// math
		{Name: "abs", Args: tt(i4), Ret: i4, Eval1: absInt},
		{Name: "abs", Args: tt(i8), Ret: i8, Eval1: absInt},
		{Name: "abs", Args: tt(types.Int2), Ret: types.Int2, Eval1: absInt},
		{Name: "abs", Args: tt(num), Ret: num, Eval1: func(a types.Value) (types.Value, error) {
			d := new(apd.Decimal)
			d.Abs(a.N)
			return types.NewNumeric(d), nil
		}},
		{Name: "abs", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return types.NewFloat8(math.Abs(a.Float())), nil }},
		{Name: "round", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return types.NewFloat8(math.RoundToEven(a.Float())), nil }},
		{Name: "round", Args: tt(num), Ret: num, Eval1: func(a types.Value) (types.Value, error) { return roundDecimal(a.N, 0) }},
		fn("round", tt(num, i4), num, func(a []types.Value) (types.Value, error) { return roundDecimal(a[0].N, int32(a[1].I)) }),
		{Name: "ceil", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return types.NewFloat8(math.Ceil(a.Float())), nil }},
		{Name: "ceiling", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return types.NewFloat8(math.Ceil(a.Float())), nil }},
		{Name: "floor", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return types.NewFloat8(math.Floor(a.Float())), nil }},
		{Name: "trunc", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return types.NewFloat8(math.Trunc(a.Float())), nil }},
		{Name: "sign", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) {
			f := a.Float()
			switch {
			case f > 0:
				return types.NewFloat8(1), nil
			case f < 0:
				return types.NewFloat8(-1), nil
			}
			return types.NewFloat8(0), nil
		}},
		{Name: "sqrt", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) {
			if a.Float() < 0 {
				return types.NullValue, pgerror.New(pgerror.InvalidArgumentForPowerFunc, "cannot take square root of a negative number")
			}
			return types.NewFloat8(math.Sqrt(a.Float())), nil
		}},
		{Name: "exp", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) { return checkFloat(f8, math.Exp(a.Float()), a.Float()) }},
		{Name: "ln", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) {
			if a.Float() <= 0 {
				return types.NullValue, pgerror.New(pgerror.InvalidArgumentForLogarithm, "cannot take logarithm of a non-positive number")
			}
			return types.NewFloat8(math.Log(a.Float())), nil
		}},
		{Name: "log", Args: tt(f8), Ret: f8, Eval1: func(a types.Value) (types.Value, error) {
			if a.Float() <= 0 {
				return types.NullValue, pgerror.New(pgerror.InvalidArgumentForLogarithm, "cannot take logarithm of a non-positive number")
			}
			return types.NewFloat8(math.Log10(a.Float())), nil
		}},
		fn("power", tt(f8, f8), f8, func(a []types.Value) (types.Value, error) {
			return checkFloat(f8, math.Pow(a[0].Float(), a[1].Float()), a[0].Float(), a[1].Float())
		}),
		fn("pow", tt(f8, f8), f8, func(a []types.Value) (types.Value, error) {
			return checkFloat(f8, math.Pow(a[0].Float(), a[1].Float()), a[0].Float(), a[1].Float())
		}),
		fn("mod", tt(i4, i4), i4, func(a []types.Value) (types.Value, error) { return intMod(i4)(a[0], a[1]) }),
		fn("mod", tt(i8, i8), i8, func(a []types.Value) (types.Value, error) { return intMod(i8)(a[0], a[1]) }),
		fn("mod", tt(types.Int2, types.Int2), types.Int2, func(a []types.Value) (types.Value, error) { return intMod(types.Int2)(a[0], a[1]) }),
		fn("mod", tt(num, num), num, func(a []types.Value) (types.Value, error) {
			if a[1].N.IsZero() {
				return types.NullValue, errDivZero
			}
			return decOp(types.DecimalContext.Rem)(a[0], a[1])
		}),
		{Name: "random", Ret: f8, Volatile: true, Eval: func([]types.Value) (types.Value, error) { return types.NewFloat8(rand.Float64()), nil }},
		{Name: "pi", Ret: f8, Eval: func([]types.Value) (types.Value, error) { return types.NewFloat8(math.Pi), nil }},
		// time
		// the statement's time in a bounded query (Env.Now), the wall
		// clock's in a pipeline; clock_timestamp() the wall clock's
		clockFunc("now", tz, func(now int64) types.Value { return types.NewTimestamp(tz, now) }),
		clockFunc("current_timestamp", tz, func(now int64) types.Value { return types.NewTimestamp(tz, now) }),
		clockFunc("statement_timestamp", tz, func(now int64) types.Value { return types.NewTimestamp(tz, now) }),
		clockFunc("transaction_timestamp", tz, func(now int64) types.Value { return types.NewTimestamp(tz, now) }),
		clockFunc("localtimestamp", ts, func(now int64) types.Value { return types.NewTimestamp(ts, now) }),
		clockFunc("current_date", types.Date, func(now int64) types.Value {
			return types.NewDate(floorDiv(now, types.MicrosPerDay))
		}),
		{Name: "clock_timestamp", Ret: tz, Volatile: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NewTimestamp(tz, time.Now().UnixMicro()), nil
		}},
		// timestamptz first: PostgreSQL's preferred type of the category
		// takes an untyped literal ('2020-01-01 10:00')
		fn("date_trunc", tt(text, tz), tz, func(a []types.Value) (types.Value, error) {
			us, err := truncTime(a[0].S, a[1].I)
			return types.NewTimestamp(tz, us), err
		}),
		fn("date_trunc", tt(text, ts), ts, func(a []types.Value) (types.Value, error) {
			us, err := truncTime(a[0].S, a[1].I)
			return types.NewTimestamp(ts, us), err
		}),
		fn("date_bin", tt(iv, tz, tz), tz, func(a []types.Value) (types.Value, error) {
			us, err := dateBin(a[0].Interval(), a[1].I, a[2].I)
			return types.NewTimestamp(tz, us), err
		}),
		fn("date_bin", tt(iv, ts, ts), ts, func(a []types.Value) (types.Value, error) {
			us, err := dateBin(a[0].Interval(), a[1].I, a[2].I)
			return types.NewTimestamp(ts, us), err
		}),
		// x AT TIME ZONE z is timezone(z, x): a timestamptz's wall time in
		// z, or the instant a timestamp's wall time is in z
		fn("timezone", tt(text, tz), ts, func(a []types.Value) (types.Value, error) {
			z, err := types.LookupZone(a[0].S)
			if err != nil {
				return types.NullValue, err
			}
			return shiftTime(ts, a[1].I, z.At(a[1].I))
		}),
		fn("timezone", tt(text, ts), tz, func(a []types.Value) (types.Value, error) {
			z, err := types.LookupZone(a[0].S)
			if err != nil {
				return types.NullValue, err
			}
			return shiftTime(tz, a[1].I, -z.Wall(a[1].I))
		}),
		fn("timezone", tt(iv, tz), ts, func(a []types.Value) (types.Value, error) {
			z, err := intervalZone(a[0])
			if err != nil {
				return types.NullValue, err
			}
			return shiftTime(ts, a[1].I, z.At(a[1].I))
		}),
		fn("timezone", tt(iv, ts), tz, func(a []types.Value) (types.Value, error) {
			z, err := intervalZone(a[0])
			if err != nil {
				return types.NullValue, err
			}
			return shiftTime(tz, a[1].I, -z.Wall(a[1].I))
		}),
		fn("date_part", tt(text, ts), f8, func(a []types.Value) (types.Value, error) {
			f, err := extract(a[0].S, a[1].I)
			return types.NewFloat8(f), err
		}),
		fn("date_part", tt(text, tz), f8, func(a []types.Value) (types.Value, error) {
			f, err := extract(a[0].S, a[1].I)
			return types.NewFloat8(f), err
		}),
		fn("extract", tt(text, ts), num, func(a []types.Value) (types.Value, error) { return extractNumeric(a[0].S, a[1].I) }),
		fn("extract", tt(text, tz), num, func(a []types.Value) (types.Value, error) { return extractNumeric(a[0].S, a[1].I) }),
		fn("extract", tt(text, iv), num, func(a []types.Value) (types.Value, error) {
			if strings.EqualFold(a[0].S, "epoch") {
				return types.Cast(types.NewFloat8(float64(a[1].Interval().Duration())/1e6), num)
			}
			return types.NullValue, pgerror.New(pgerror.FeatureNotSupported, "extract(%s from interval) is not supported yet", a[0].S)
		}),
		{Name: "to_timestamp", Args: tt(f8), Ret: tz, Eval1: func(a types.Value) (types.Value, error) {
			return types.NewTimestamp(tz, int64(math.Round(a.Float()*1e6))), nil
		}},
		// nulls and comparisons
		{Name: "nullif", Args: tt(Any, Any), Ret: Any, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			if a[0].K != types.Null && a[1].K != types.Null && types.Compare(a[0], a[1]) == 0 {
				return types.NullValue, nil
			}
			return a[0], nil
		}},
		{Name: "greatest", Args: tt(Any), Variadic: true, Ret: Any, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			best := types.NullValue
			for _, v := range a {
				if v.K != types.Null && (best.K == types.Null || types.Compare(v, best) > 0) {
					best = v
				}
			}
			return best, nil
		}},
		{Name: "least", Args: tt(Any), Variadic: true, Ret: Any, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			best := types.NullValue
			for _, v := range a {
				if v.K != types.Null && (best.K == types.Null || types.Compare(v, best) < 0) {
					best = v
				}
			}
			return best, nil
		}},
		fn("like", tt(text, text), b, func(a []types.Value) (types.Value, error) {
			m, err := likeMatch(a[0].S, a[1].S, false)
			return types.NewBool(m), err
		}),
		fn("ilike", tt(text, text), b, func(a []types.Value) (types.Value, error) {
			m, err := likeMatch(a[0].S, a[1].S, true)
			return types.NewBool(m), err
		}),
		fn("regexp_match_bool", tt(text, text), b, func(a []types.Value) (types.Value, error) {
			m, err := regexMatch(a[0].S, a[1].S, false)
			return types.NewBool(m), err
		}),
		fn("regexp_imatch_bool", tt(text, text), b, func(a []types.Value) (types.Value, error) {
			m, err := regexMatch(a[0].S, a[1].S, true)
			return types.NewBool(m), err
		}),
		{Name: "pg_typeof", Args: tt(Any), Ret: text, NonStrict: true, Eval: func(a []types.Value) (types.Value, error) {
			return types.NewText(a[0].K.String()), nil
		}},
		// jsonb
		fn("->>", tt(types.JSONB, text), text, func(a []types.Value) (types.Value, error) { return jsonField(a[0], a[1].S, true) }),
		fn("->", tt(types.JSONB, text), types.JSONB, func(a []types.Value) (types.Value, error) { return jsonField(a[0], a[1].S, false) }),
		fn("->>", tt(types.JSONB, i4), text, func(a []types.Value) (types.Value, error) { return jsonElement(a[0], a[1].I, true) }),
		fn("->", tt(types.JSONB, i4), types.JSONB, func(a []types.Value) (types.Value, error) { return jsonElement(a[0], a[1].I, false) }),
		fn("#>>", tt(types.JSONB, types.TextArray), text, func(a []types.Value) (types.Value, error) { return jsonPathOp(a[0], a[1], true) }),
		fn("#>", tt(types.JSONB, types.TextArray), types.JSONB, func(a []types.Value) (types.Value, error) { return jsonPathOp(a[0], a[1], false) }),
		// json_build_object and jsonb_build_object both make jsonb: fvsql
		// has no json type (SQLAlchemy's get_columns builds identity
		// options with it).
		{Name: "json_build_object", Args: tt(Any), Variadic: true, Ret: types.JSONB, NonStrict: true, Eval: buildObject},
		{Name: "jsonb_build_object", Args: tt(Any), Variadic: true, Ret: types.JSONB, NonStrict: true, Eval: buildObject},
		// pg_sleep waits, until the query is cancelled or times out.
		{Name: "pg_sleep", Args: tt(types.Float8), Ret: types.Null, Volatile: true, EvalContext: pgSleep},
		// pg_get_serial_sequence: fvsql has no sequences, so no column
		// owns one.
		{Name: "pg_get_serial_sequence", Args: tt(text, text), Ret: text, NonStrict: true, Eval: func([]types.Value) (types.Value, error) {
			return types.NullValue, nil
		}},
	}
	for _, f := range fs {
		if f.Name == "->>" || f.Name == "->" || f.Name == "#>>" || f.Name == "#>" {
			f.Infix = true
		}
	}
	Register(fs...)
}

// buildObject is json_build_object(k1, v1, …): keys as text, never NULL.
func buildObject(a []types.Value) (types.Value, error) {
	if len(a)%2 != 0 {
		return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "argument list must have even number of elements").
			WithHint("The arguments of json_build_object() must consist of alternating keys and values.")
	}
	buf := []byte{'{'}
	for i := 0; i < len(a); i += 2 {
		if a[i].K == types.Null {
			return types.NullValue, pgerror.New(pgerror.NullValueNotAllowed, "null value not allowed for object key")
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = types.AppendJSONValue(buf, types.NewText(a[i].Text()))
		buf = append(buf, ':')
		if a[i+1].K == types.Null {
			buf = append(buf, "null"...)
		} else {
			buf = types.AppendJSONValue(buf, a[i+1])
		}
		if err := checkSize("json_build_object", int64(len(buf))); err != nil {
			return types.NullValue, err
		}
	}
	buf = append(buf, '}')
	return types.Cast(types.NewText(string(buf)), types.JSONB)
}

// pgSleep is pg_sleep(seconds): it returns NULL (void) after the time, or
// the query's end (a cancel, statement_timeout) as its error.
func pgSleep(ctx context.Context, a []types.Value) (types.Value, error) {
	secs := a[0].Float()
	if secs <= 0 || math.IsNaN(secs) {
		return types.NullValue, nil
	}
	d := time.Duration(math.Min(secs, 1e9) * float64(time.Second))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return types.NullValue, nil
	case <-ctx.Done():
		return types.NullValue, context.Cause(ctx)
	}
}

// intervalZone is AT TIME ZONE INTERVAL '…': a fixed offset east of UTC,
// without months or days.
func intervalZone(v types.Value) (types.Zone, error) {
	iv := v.Interval()
	if iv.Months != 0 || iv.Days != 0 {
		return types.Zone{}, pgerror.New(pgerror.InvalidParameterValue, "interval time zone %q must not include months or days", v.Text())
	}
	return types.FixedZone(iv.Micros), nil
}

// shiftTime is the time us moved by off microseconds, as type t; past the
// range of time stamps it is PostgreSQL's 22008.
func shiftTime(t types.Type, us, off int64) (types.Value, error) {
	r, err := AddInterval(us, types.IntervalValue{Micros: off})
	if err != nil {
		return types.NullValue, err
	}
	return types.NewTimestamp(t, r), nil
}

// clockFunc is a clock function without arguments whose value at a time
// is at: the statement's time in a bounded query (Func.EvalAt), the wall
// clock's at each call elsewhere.
func clockFunc(name string, ret types.Type, at func(now int64) types.Value) *Func {
	return &Func{Name: name, Ret: ret, Volatile: true, EvalAt: at, Eval: func([]types.Value) (types.Value, error) {
		return at(time.Now().UnixMicro()), nil
	}}
}
