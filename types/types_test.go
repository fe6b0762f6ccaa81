package types

import (
	"errors"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"github.com/fvsql/fvsql/pgerror"
)

func TestTextRoundTrip(t *testing.T) {
	cases := []struct {
		t    Type
		in   string
		want string
	}{
		{Bool, "true", "t"}, {Bool, "off", "f"},
		{Int2, "-32768", "-32768"}, {Int4, " 42 ", "42"}, {Int8, "9223372036854775807", "9223372036854775807"},
		{Float8, "1.5", "1.5"}, {Float8, "1e20", "1e+20"}, {Float8, "100000", "100000"}, {Float8, "1000000", "1000000"},
		{Float8, "NaN", "NaN"}, {Float8, "-Infinity", "-Infinity"}, {Float4, "0.1", "0.1"},
		{Numeric, "300.0", "300.0"}, {Numeric, "-0.00120", "-0.00120"}, {Numeric, "12345678901234567890.123", "12345678901234567890.123"},
		{Text, "héllo", "héllo"}, {Bytea, `\x00ff41`, `\x00ff41`},
		{Date, "2026-01-01", "2026-01-01"}, {Date, "1999-12-31", "1999-12-31"}, {Date, "0001-01-01", "0001-01-01"},
		{Timestamp, "2026-01-01 09:00:00", "2026-01-01 09:00:00"},
		{Timestamp, "2026-01-01T09:00:00.5Z", "2026-01-01 09:00:00.5"},
		{Timestamp, "1969-12-31 23:59:59.999999", "1969-12-31 23:59:59.999999"},
		{TimestampTZ, "2026-01-01 09:00:00+02", "2026-01-01 07:00:00+00"},
		{TimestampTZ, "2026-01-01T09:00:00+05:30", "2026-01-01 03:30:00+00"},
		{Interval, "4 seconds", "00:00:04"}, {Interval, "1 day 02:00:00", "1 day 02:00:00"},
		{Interval, "1 year 2 months 3 days", "1 year 2 mons 3 days"}, {Interval, "-1 hour", "-01:00:00"},
		{Interval, "PT1M30S", "00:01:30"}, {Interval, "1.5 minutes", "00:01:30"},
		{JSONB, `{"b": 1, "a": [1, 2, {"z": null}], "a": true}`, `{"a": true, "b": 1}`},
	}
	for _, c := range cases {
		v, err := ParseText(c.t, c.in)
		if err != nil {
			t.Errorf("ParseText(%s, %q): %v", c.t, c.in, err)
			continue
		}
		if got := v.Text(); got != c.want {
			t.Errorf("ParseText(%s, %q).Text() = %q, want %q", c.t, c.in, got, c.want)
		}
		// binary round trip
		b := AppendBinary(nil, v)
		w, err := ParseBinary(c.t, b)
		if err != nil {
			t.Errorf("ParseBinary(%s, %q): %v", c.t, c.in, err)
			continue
		}
		if w.Text() != v.Text() {
			t.Errorf("binary round trip of %s %q: %q", c.t, c.in, w.Text())
		}
	}
}

func TestBadInputCodes(t *testing.T) {
	cases := []struct {
		t    Type
		in   string
		code string
	}{
		{Int4, "abc", pgerror.InvalidTextRepresentation.String()},
		{Int4, "2147483648", pgerror.NumericValueOutOfRange.String()},
		{Int2, "40000", pgerror.NumericValueOutOfRange.String()},
		{Int8, "99999999999999999999", pgerror.NumericValueOutOfRange.String()},
		{Float8, "x1", pgerror.InvalidTextRepresentation.String()},
		{Bool, "maybe", pgerror.InvalidTextRepresentation.String()},
		{Timestamp, "2026-13-01", pgerror.InvalidDatetimeFormat.String()},
		{Date, "yesterday-ish", pgerror.InvalidDatetimeFormat.String()},
		{Numeric, "1.2.3", pgerror.InvalidTextRepresentation.String()},
		{JSONB, "{", pgerror.InvalidTextRepresentation.String()},
	}
	for _, c := range cases {
		_, err := ParseText(c.t, c.in)
		if got := pgerror.CodeOf(err).String(); got != c.code {
			t.Errorf("ParseText(%s, %q) code = %s (%v), want %s", c.t, c.in, got, err, c.code)
		}
	}
}

func TestNumericBinary(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "10000", "123456789.000123", "0.0001", "-0.5", "99999999999999999999999.99", "1e-10", "1200"} {
		v, err := ParseText(Numeric, s)
		if err != nil {
			t.Fatal(err)
		}
		w, err := ParseBinary(Numeric, AppendBinary(nil, v))
		if err != nil {
			t.Fatal(err)
		}
		if v.N.Cmp(w.N) != 0 || v.Text() != w.Text() {
			t.Errorf("numeric %s round trip: %s", s, w.Text())
		}
	}
}

func TestJSONCodec(t *testing.T) {
	c := NewJSONCodec([]string{"sym", "price", "qty", "ts", "ok", "doc", "raw"},
		[]Type{Text, Float8, Int8, Timestamp, Bool, JSONB, Bytea})
	row := make(Row, 7)
	in := `{"sym":"AC\"ME","price":10.5,"qty":100,"ts":"2026-01-01 09:00:00","ok":true,"doc":{"b":1,"a":2},"raw":"AAE=","extra":[1,{"x":2}]}`
	if err := c.Decode([]byte(in), row); err != nil {
		t.Fatal(err)
	}
	want := []string{`AC"ME`, "10.5", "100", "2026-01-01 09:00:00", "t", `{"a": 2, "b": 1}`, `\x0001`}
	for i, w := range want {
		if row[i].Text() != w {
			t.Errorf("col %d = %q, want %q", i, row[i].Text(), w)
		}
	}
	out := c.Append(nil, row)
	row2 := make(Row, 7)
	if err := c.Decode(out, row2); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
	for i := range row {
		if !Equal(row[i], row2[i]) {
			t.Errorf("round trip col %d: %v vs %v", i, row[i], row2[i])
		}
	}
	// epoch millis and missing fields
	if err := c.Decode([]byte(`{"ts": 1767258000000, "qty": "7"}`), row); err != nil {
		t.Fatal(err)
	}
	if row[3].Text() != "2026-01-01 09:00:00" || row[2].I != 7 || !row[0].IsNull() {
		t.Errorf("got %v", row)
	}
	for _, bad := range []string{`{"qty": 1.5}`, `{"qty": "x"}`, `{"qty": 99999999999999999999}`, `[1]`, `{"sym": "a"`, `{"sym": "\xff"}`, `{"ok": 3}`, `{"qty": {}}`, ``} {
		err := c.Decode([]byte(bad), row)
		var pe *pgerror.Error
		if err == nil || !errors.As(err, &pe) {
			t.Errorf("Decode(%q) = %v, want a coded error", bad, err)
		}
	}
}

func TestBinaryCodec(t *testing.T) {
	j := NewJSONCodec([]string{"sym", "price", "qty", "ts", "ok", "doc", "raw", "n", "none"},
		[]Type{Text, Float8, Int8, Timestamp, Bool, JSONB, Bytea, Numeric, Int4})
	row := make(Row, 9)
	if err := j.Decode([]byte(`{"sym":"é\"x","price":-0.1,"qty":-7,"ts":"2026-01-01 09:00:00.123456","ok":false,"doc":[1,{"a":null}],"raw":"AAE=","n":"12.3400"}`), row); err != nil {
		t.Fatal(err)
	}
	c := NewBinaryCodec(9)
	out := c.Append(nil, row)
	got := make(Row, 9)
	if err := c.Decode(out, got); err != nil {
		t.Fatal(err)
	}
	for i := range row {
		if row[i].K != got[i].K || row[i].Text() != got[i].Text() {
			t.Errorf("col %d: %v (%s) came back as %v (%s)", i, row[i], row[i].Text(), got[i], got[i].Text())
		}
	}
	if got[7].Text() != "12.3400" || !got[8].IsNull() {
		t.Errorf("numeric scale or NULL lost: %v", got)
	}
	for _, bad := range [][]byte{out[:len(out)-1], append(append([]byte(nil), out...), 0), {0xff}, nil} {
		if err := c.Decode(bad, got); err == nil {
			t.Errorf("Decode(%x) accepted a malformed payload", bad)
		}
	}
}

func TestKeyOrder(t *testing.T) {
	vals := []Value{NewInt8(-5), NewInt8(0), NewInt8(7)}
	for i := 1; i < len(vals); i++ {
		a, b := AppendKey(nil, vals[i-1]), AppendKey(nil, vals[i])
		if string(a) >= string(b) {
			t.Errorf("key order %v >= %v", vals[i-1], vals[i])
		}
	}
	if string(AppendKey(nil, NewText("ab"))) >= string(AppendKey(nil, NewText("abc"))) {
		t.Error("prefix string must sort first")
	}
	for _, v := range []Value{NewText("a\x00b"), NewInt8(-3), NewFloat8(-2.5), NewBool(true)} {
		got, rest, err := DecodeKey(AppendKey(nil, v), v.K)
		if err != nil || len(rest) != 0 || !Equal(got, v) {
			t.Errorf("DecodeKey(%v) = %v, %v", v, got, err)
		}
	}
}

func BenchmarkJSONDecode(b *testing.B) {
	c := NewJSONCodec([]string{"sym", "price", "qty", "ts"}, []Type{Text, Float8, Int8, Timestamp})
	in := []byte(`{"sym":"ACME","price":10.5,"qty":100,"ts":"2026-01-01T09:00:00"}`)
	row := make(Row, 4)
	for i := 0; i < b.N; i++ {
		if err := c.Decode(in, row); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func TestIntegerRangeEdges(t *testing.T) {
	c := NewJSONCodec([]string{"n", "s"}, []Type{Int8, Int2})
	row := make(Row, 2)
	for _, in := range []string{`{"n": 9223372036854775808}`, `{"n": -9223372036854775809}`, `{"n": 9.3e18}`, `{"n": 1e19}`, `{"s": 32768}`, `{"s": 40000.0}`} {
		if err := c.Decode([]byte(in), row); pgerror.CodeOf(err).String() != pgerror.NumericValueOutOfRange.String() {
			t.Errorf("Decode(%s) = %v, want 22003", in, err)
		}
	}
	for in, want := range map[string]int64{`{"n": 9223372036854775807}`: 9223372036854775807, `{"n": -9223372036854775808}`: -9223372036854775808, `{"n": 1e3}`: 1000} {
		if err := c.Decode([]byte(in), row); err != nil || row[0].I != want {
			t.Errorf("Decode(%s) = %v %v, want %d", in, row[0], err, want)
		}
	}
	if _, err := Cast(NewFloat8(9223372036854775808.0), Int8); pgerror.CodeOf(err).String() != pgerror.NumericValueOutOfRange.String() {
		t.Errorf("cast 2^63 to bigint: %v", err)
	}
	if v, err := Cast(NewFloat8(-9223372036854775808.0), Int8); err != nil || v.I != -9223372036854775808 {
		t.Errorf("cast -2^63 to bigint: %v %v", v, err)
	}
}

// TestCompareNumericNaN: PostgreSQL orders numeric NaN above every other
// number and equal to itself, as float NaN.
func TestCompareNumericNaN(t *testing.T) {
	nan, err := ParseDecimal("NaN")
	if err != nil {
		t.Fatal(err)
	}
	n, five := NewNumeric(nan), NewNumeric(apd.New(5, 0))
	for _, c := range []struct {
		a, b Value
		want int
	}{{n, five, 1}, {five, n, -1}, {n, n, 0}, {n, NewInt8(7), 1}, {NewFloat8(1e300), n, -1}} {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
