package pgwire

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestPgxArrays sends arrays of int2, int4, int8, oid, text, float8 and
// bool as parameters (binary where pgx can, text in the simple protocol)
// and reads them back from binary and text results, NULL elements and
// empty arrays included.
func TestPgxArrays(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	one := int64(1)
	cases := []struct {
		typ  string
		in   any
		want any // what scanning into a new value of the same type gives
	}{
		{"int2[]", []int16{1, -2, 32767}, []int16{1, -2, 32767}},
		{"int4[]", []int32{}, []int32{}},
		{"int4[]", []int32{7, 0, -2147483648}, []int32{7, 0, -2147483648}},
		{"int8[]", []*int64{&one, nil}, []*int64{&one, nil}},
		{"int8[]", []int64{-9007199254740993}, []int64{-9007199254740993}},
		{"oid[]", []uint32{0, 26, 4294967295}, []uint32{0, 26, 4294967295}},
		{"text[]", []string{"a", "", "NULL", "x,y", `q"\`, "héllo wörld"}, []string{"a", "", "NULL", "x,y", `q"\`, "héllo wörld"}},
		{"text[]", []*string{nil}, []*string{nil}},
		{"float8[]", []float64{1.5, -0.25, 1e300}, []float64{1.5, -0.25, 1e300}},
		{"bool[]", []bool{true, false}, []bool{true, false}},
	}
	for _, mode := range allModes {
		for i, c := range cases {
			t.Run(fmt.Sprintf("%v/%d_%s", mode, i, c.typ), func(t *testing.T) {
				got := reflect.New(reflect.TypeOf(c.want))
				if err := conn.QueryRow(ctx, "SELECT $1::"+c.typ, mode, c.in).Scan(got.Interface()); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Elem().Interface(), c.want) {
					t.Errorf("%s: got %#v, want %#v", c.typ, got.Elem().Interface(), c.want)
				}
			})
		}
	}
	// The server's own array values, in binary and in text.
	for _, mode := range allModes {
		var ints pgtype.FlatArray[*int32]
		var texts pgtype.FlatArray[pgtype.Text]
		err := conn.QueryRow(ctx, `SELECT '{1,NULL,3}'::int4[], '{a,"b c",NULL}'::text[]`, mode).Scan(&ints, &texts)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		if len(ints) != 3 || *ints[0] != 1 || ints[1] != nil || *ints[2] != 3 {
			t.Errorf("%v: int4[] = %v", mode, ints)
		}
		if len(texts) != 3 || texts[0].String != "a" || texts[1].String != "b c" || texts[2].Valid {
			t.Errorf("%v: text[] = %#v", mode, texts)
		}
	}
	var raw string
	if err := conn.QueryRow(ctx, `SELECT '{x,"y z",NULL}'::text[]`, pgx.QueryExecModeSimpleProtocol).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if raw != `{x,"y z",NULL}` {
		t.Errorf("text form = %q", raw)
	}
}

// TestArrayBinaryWire checks the bytes: a binary int4[] parameter comes
// back as the same binary result, and a text one as array_out's text.
func TestArrayBinaryWire(t *testing.T) {
	_, addr := startServer(t, Config{}, newTestHandler())
	conn := connectPgx(t, addr, "")
	ctx := testCtx(t)
	// array_send of '{7,NULL}'::int4[]: ndim 1, has nulls, element 23, 2 elements from 1, 7, NULL
	bin := []byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff}
	res := conn.PgConn().ExecParams(ctx, "SELECT $1::int4[]", [][]byte{bin}, []uint32{1007}, []int16{1}, []int16{1}).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.FieldDescriptions[0].DataTypeOID != 1007 || res.FieldDescriptions[0].Format != 1 || string(res.Rows[0][0]) != string(bin) {
		t.Errorf("binary round trip: oid %d format %d %x", res.FieldDescriptions[0].DataTypeOID, res.FieldDescriptions[0].Format, res.Rows[0][0])
	}
	res = conn.PgConn().ExecParams(ctx, "SELECT $1::int4[]", [][]byte{bin}, []uint32{1007}, []int16{1}, []int16{0}).Read()
	if res.Err != nil || string(res.Rows[0][0]) != "{7,NULL}" {
		t.Errorf("text result: %q %v", res.Rows[0][0], res.Err)
	}
}
