package expr

import (
	"strings"
	"unsafe"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// MaxValueBytes is the largest value a function, operator or cast builds:
// a text or bytea of that many bytes, or an array taking that much memory
// decoded (see arrayBytes). A call whose result would be larger fails with
// 54000 (program_limit_exceeded) before it allocates the result, so that a
// client cannot exhaust the server with lpad('x', 2147483647), and constant
// folding, which runs the same evaluators while planning, fails the same
// way instead of allocating.
//
// PostgreSQL's own limit is 1 GB - 1 for a text or bytea. fvsql's is a
// quarter of that: a value is copied on its way to the client (its text
// form, the wire message), so a few such values at once must still fit in
// a process run with a 1 GiB GOMEMLIMIT. Aggregates that build a value
// (string_agg, array_agg: operators' maxAggValueBytes, equal to this)
// check their running size against the same limit as values are added.
const MaxValueBytes = 256 << 20

// maxValueBytes is the limit in force: MaxValueBytes, lowered by tests
// (SetMaxValueBytes in export_test.go) to reach it without allocating
// hundreds of MiB.
var maxValueBytes int64 = MaxValueBytes

// valueBytes is the memory of one types.Value besides its string's bytes:
// what each element of an array costs once decoded (types.Value.Elems),
// which is why an array's size counts it (an int[] of a million elements
// takes 48 MB decoded, not the few MB of its encoding).
const valueBytes = int64(unsafe.Sizeof(types.Value{}))

// errLengthTooLarge is PostgreSQL's error for lpad, rpad and repeat asked
// for more than a value can hold.
var errLengthTooLarge = pgerror.New(pgerror.ProgramLimitExceeded, "requested length too large")

// checkSize fails when a text or bytea of n bytes, built by what, is over
// the limit. n must be computed without overflow (lengths and counts of
// values within the limit, a few of them added or one multiplied by an
// int4, stay far inside int64); a negative n counts as too large.
func checkSize(what string, n int64) error {
	if n < 0 || n > maxValueBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "result of %s would be %d bytes, more than the maximum value size (%d bytes)", what, n, maxValueBytes)
	}
	return nil
}

// checkArray fails when an array of n elements whose strings hold payload
// bytes is over the limit.
func checkArray(n, payload int64) error {
	if n < 0 || payload < 0 || n > maxValueBytes/valueBytes || n*valueBytes+payload > maxValueBytes {
		return pgerror.New(pgerror.ProgramLimitExceeded, "array size exceeds the maximum allowed (%d bytes)", maxValueBytes)
	}
	return nil
}

// arrayBytes is an array value's size as checkArray counts it: its
// elements decoded, with their strings (over-counted by the encoding's
// few bytes of header per element).
func arrayBytes(a types.Value) (n, payload int64) {
	return int64(a.ArrayLen()), int64(len(a.S))
}

// elemPayload is the bytes an element holds besides its types.Value.
func elemPayload(e types.Value) int64 {
	if e.N != nil {
		return int64(e.N.NumDigits())
	}
	return int64(len(e.S))
}

// newArray is types.NewArray after checkArray.
func newArray(t types.Type, elems []types.Value) (types.Value, error) {
	var payload int64
	for _, e := range elems {
		payload += elemPayload(e)
	}
	if err := checkArray(int64(len(elems)), payload); err != nil {
		return types.NullValue, err
	}
	return types.NewArray(t, elems), nil
}

// limitedBuilder is a strings.Builder that refuses, with checkSize's
// error, to grow past the limit.
type limitedBuilder struct {
	strings.Builder
	what string
}

func (b *limitedBuilder) add(s string) error {
	if err := checkSize(b.what, int64(b.Len())+int64(len(s))); err != nil {
		return err
	}
	b.WriteString(s)
	return nil
}

func (b *limitedBuilder) addByte(c byte) error {
	if int64(b.Len()) >= maxValueBytes {
		return checkSize(b.what, int64(b.Len())+1)
	}
	b.WriteByte(c)
	return nil
}

// arrayTextElems is an upper bound of the elements of an array's text
// form ('{a,"b,c",d}'): its commas outside double quotes, plus one.
func arrayTextElems(s string) int64 {
	n, quoted := int64(1), false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				n++
			}
		}
	}
	return n
}

// castValue is types.Cast within the limit: text read as an array is
// checked before it is parsed (each element costs a types.Value decoded,
// so '{1,1,…}' grows 24 times), and every other result once made (a cast
// grows its input by a bounded factor at most: bytea's hex text form is
// twice its size).
func castValue(v types.Value, to types.Type) (types.Value, error) {
	if to.IsArray() && v.K.IsString() {
		if err := checkArray(arrayTextElems(v.S), int64(len(v.S))); err != nil {
			return types.NullValue, err
		}
	}
	r, err := types.Cast(v, to)
	if err != nil {
		return r, err
	}
	if int64(len(r.S)) > maxValueBytes {
		return types.NullValue, checkSize("a cast to "+to.String(), int64(len(r.S)))
	}
	return r, nil
}
