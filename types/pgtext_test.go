package types

import (
	"math"
	"strconv"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

// TestFloatText checks float output against PostgreSQL's float4out and
// float8out (shortest round-trip digits; fixed notation for decimal
// exponents in [-4, 15) for float8 and [-4, 6) for float4).
func TestFloatText(t *testing.T) {
	for _, tc := range []struct {
		f      float64
		f8, f4 string
	}{
		{0, "0", "0"},
		{math.Copysign(0, -1), "-0", "-0"},
		{1, "1", "1"},
		{-0.1, "-0.1", "-0.1"},
		{1.5, "1.5", "1.5"},
		{100000, "100000", "100000"},
		{1234567, "1234567", "1.234567e+06"},
		{1e14, "100000000000000", "1e+14"},
		{123456789012345, "123456789012345", "1.2345679e+14"},
		{1e15, "1e+15", "1e+15"},
		{1.5e15, "1.5e+15", "1.5e+15"},
		{0.0001, "0.0001", "0.0001"},
		{0.00012345, "0.00012345", "0.00012345"},
		{1.5e-5, "1.5e-05", "1.5e-05"},
		{1e300, "1e+300", "+Inf"},
		{5e-324, "5e-324", "0"},
		{123.456, "123.456", "123.456"},
		{-98765.4321, "-98765.4321", "-98765.43"},
		{math.MaxFloat64, "1.7976931348623157e+308", "+Inf"},
		{math.NaN(), "NaN", "NaN"},
		{math.Inf(-1), "-Infinity", "-Infinity"},
	} {
		if got := NewFloat8(tc.f).Text(); got != tc.f8 {
			t.Errorf("float8 %v: %q, want %q", tc.f, got, tc.f8)
		}
		if tc.f4 == "+Inf" {
			continue // out of float4's range
		}
		if got := NewFloat(Float4, float64(float32(tc.f))).Text(); got != tc.f4 {
			t.Errorf("float4 %v: %q, want %q", tc.f, got, tc.f4)
		}
	}
	// Every output parses back to the same value.
	for _, f := range []float64{1234567.125, 1e14 + 0.5, 9.999999999999999e14, 1e-4 * 3, 2.5e-7, 6.02214076e23} {
		s := NewFloat8(f).Text()
		if g, err := strconv.ParseFloat(s, 64); err != nil || g != f {
			t.Errorf("%v printed %q, parsed back %v %v", f, s, g, err)
		}
	}
}

func TestByteaInput(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		code     string
	}{
		{`\x0001ff`, "\x00\x01\xff", ""},
		{`\xDEAD beef`, "\xde\xad\xbe\xef", ""},
		{`\x`, "", ""},
		{`\x123`, "", pgerror.InvalidParameterValue.String()},
		{`\x1g`, "", pgerror.InvalidParameterValue.String()},
		{`abc`, "abc", ""},
		{`a\\b`, `a\b`, ""},
		{`\001\377x`, "\x01\xffx", ""},
		{`'\047'`, "'''", ""},
		{`a\b`, "", pgerror.InvalidTextRepresentation.String()},
		{`\400`, "", pgerror.InvalidTextRepresentation.String()},
		{`trailing\`, "", pgerror.InvalidTextRepresentation.String()},
	} {
		v, err := ParseText(Bytea, tc.in)
		if tc.code != "" {
			if pgerror.CodeOf(err).String() != tc.code {
				t.Errorf("%q: err %v, want %s", tc.in, err, tc.code)
			}
			continue
		}
		if err != nil || v.S != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.in, v.S, err, tc.want)
		}
		// The hex output form reads back.
		if w, err := ParseText(Bytea, v.Text()); err != nil || w.S != v.S {
			t.Errorf("%q: round trip of %q gave %q %v", tc.in, v.Text(), w.S, err)
		}
	}
}
