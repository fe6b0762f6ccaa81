package types

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

func TestArrayTypes(t *testing.T) {
	for _, c := range []struct {
		name    string
		want    Type
		elem    Type
		oid     uint32
		typname string
		format  string
	}{
		{"int[]", Int4Array, Int4, 1007, "_int4", "integer[]"},
		{"integer[3]", Int4Array, Int4, 1007, "_int4", "integer[]"},
		{"_int8", Int8Array, Int8, 1016, "_int8", "bigint[]"},
		{"text[][]", TextArray, Text, 1009, "_text", "text[]"},
		{"pg_catalog.oid[]", OidArray, Oid, 1028, "_oid", "oid[]"},
		{"double precision[]", Float8Array, Float8, 1022, "_float8", "double precision[]"},
		{"boolean array", BoolArray, Bool, 1000, "_bool", "boolean[]"},
		{"varchar(10)[]", VarcharArray, Varchar, 1015, "_varchar", "character varying[]"},
		{`"char"[]`, CharArray, Char, 1002, "_char", `"char"[]`},
		{"int2[]", Int2Array, Int2, 1005, "_int2", "smallint[]"},
	} {
		got, err := Parse(c.name)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.name, got, err, c.want)
			continue
		}
		if got.Elem() != c.elem || !got.IsArray() || ArrayOf(c.elem) != got || got.OID() != c.oid ||
			got.TypName() != c.typname || got.String() != c.format {
			t.Errorf("%s: elem %v oid %d typname %q format %q", c.name, got.Elem(), got.OID(), got.TypName(), got.String())
		}
		if byOID, ok := ByOID(c.oid); !ok || byOID != got {
			t.Errorf("ByOID(%d) = %v", c.oid, byOID)
		}
	}
	if _, err := Parse("char"); err != nil {
		t.Fatal(err)
	}
	if c, _ := Parse("char"); c != Text {
		t.Errorf(`char is SQL's character type, got %v`, c)
	}
	if ArrayOf(Int4Array) != Null || Int4.IsArray() || Int4.Elem() != Null {
		t.Error("arrays of arrays or scalar element types")
	}
}

func TestArrayText(t *testing.T) {
	for _, c := range []struct {
		t        Type
		in, want string
		n        int
	}{
		{Int4Array, "{1,2,3}", "{1,2,3}", 3},
		{Int4Array, " { 1 , -2 ,NULL } ", "{1,-2,NULL}", 3},
		{Int4Array, "{}", "{}", 0},
		{Int4Array, "[1:2]={7,8}", "{7,8}", 2},
		{TextArray, `{a,"b c","",NULL,"NULL","x\"y",z\,w,"\\"}`, `{a,"b c","",NULL,"NULL","x\"y","z,w","\\"}`, 8},
		{TextArray, `{  two words  ,null}`, `{"two words",NULL}`, 2},
		{TextArray, `{{,}}`, ``, -1},
		{Float8Array, "{1.5,NaN,-Infinity}", "{1.5,NaN,-Infinity}", 3},
		{BoolArray, "{t,false,NULL}", "{t,f,NULL}", 3},
		{NumericArray, "{1.50,-2}", "{1.50,-2}", 2},
		{TimestampArray, "{2026-01-01 09:00:00}", `{"2026-01-01 09:00:00"}`, 1},
		{ByteaArray, `{"\\x01ff"}`, `{"\\x01ff"}`, 1},
		{OidArray, "{0}", "{0}", 1},
		{RegtypeArray, "{int4,text}", "{integer,text}", 2},
	} {
		v, err := ParseText(c.t, c.in)
		if c.n < 0 {
			if err == nil {
				t.Errorf("ParseText(%s, %q) = %s, want an error", c.t, c.in, v)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseText(%s, %q): %v", c.t, c.in, err)
			continue
		}
		if got := v.Text(); got != c.want || v.ArrayLen() != c.n || len(v.Elems()) != c.n {
			t.Errorf("ParseText(%s, %q) = %q (%d elements), want %q (%d)", c.t, c.in, got, v.ArrayLen(), c.want, c.n)
		}
		again, err := ParseText(c.t, v.Text())
		if err != nil || Compare(again, v) != 0 || again.S != v.S {
			t.Errorf("%s %q: output does not read back: %v", c.t, c.in, err)
		}
		b := AppendBinary(nil, v)
		w, err := ParseBinary(c.t, b)
		if err != nil || w.Text() != v.Text() {
			t.Errorf("%s %q: binary round trip = %s, %v", c.t, c.in, w, err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back Value
		if err := json.Unmarshal(j, &back); err != nil || back.K != v.K || back.S != v.S {
			t.Errorf("%s %q: plan JSON round trip = %s, %v", c.t, c.in, back, err)
		}
	}
	for _, in := range []string{"1,2", "{1,2", "{1,,2}", "{1,2}x", `{"a"b}`, "{a", `{"a`, "{,}"} {
		if _, err := ParseText(TextArray, in); pgerror.CodeOf(err) != pgerror.InvalidTextRepresentation {
			t.Errorf("ParseText(text[], %q) = %v, want 22P02", in, err)
		}
	}
	if _, err := ParseText(Int4Array, "{a}"); pgerror.CodeOf(err) != pgerror.InvalidTextRepresentation {
		t.Errorf("bad element: %v", err)
	}
	if _, err := ParseText(Int4Array, "{{1},{2}}"); pgerror.CodeOf(err) != pgerror.FeatureNotSupported {
		t.Errorf("two dimensions: %v", err)
	}
}

// TestArrayBinaryFormat checks array_send's layout byte by byte.
func TestArrayBinaryFormat(t *testing.T) {
	v := NewArray(Int4Array, []Value{NewInt(Int4, 7), NullValue})
	var want []byte
	for _, x := range []uint32{1, 1, 23, 2, 1, 4, 7, 0xFFFFFFFF} {
		want = binary.BigEndian.AppendUint32(want, x)
	}
	if got := AppendBinary(nil, v); !bytes.Equal(got, want) {
		t.Errorf("int4[] {7,NULL} = %x, want %x", got, want)
	}
	empty := AppendBinary(nil, NewArray(TextArray, nil))
	if want := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 25}; !bytes.Equal(empty, want) {
		t.Errorf("empty text[] = %x, want %x", empty, want)
	}
	if _, err := ParseBinary(Int8Array, want); pgerror.CodeOf(err) != pgerror.DatatypeMismatch {
		t.Errorf("element type mismatch: %v", err)
	}
	if _, err := ParseBinary(Int4Array, AppendBinary(nil, v)[:20]); pgerror.CodeOf(err) != pgerror.InvalidBinaryRepresentation {
		t.Errorf("truncated: %v", err)
	}
}

func TestArrayCompareAndKeys(t *testing.T) {
	arr := func(typ Type, s string) Value {
		v, err := ParseText(typ, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	ordered := []Value{
		arr(Int4Array, "{}"), arr(Int4Array, "{1}"), arr(Int4Array, "{1,2}"), arr(Int4Array, "{1,NULL}"),
		arr(Int4Array, "{2}"), arr(Int4Array, "{NULL}"),
	}
	for i := range ordered {
		for j := range ordered {
			want := cmpInt(int64(i), int64(j))
			if got := Compare(ordered[i], ordered[j]); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
		k := AppendKey(nil, ordered[i])
		back, rest, err := DecodeKey(k, Int4Array)
		if err != nil || len(rest) != 0 || back.S != ordered[i].S {
			t.Errorf("key of %s decodes to %s, %v", ordered[i], back, err)
		}
	}
	// equal values of different forms group together
	a, b := arr(NumericArray, "{1.0,NULL}"), arr(NumericArray, "{1.00,NULL}")
	if Compare(a, b) != 0 || !bytes.Equal(AppendKey(nil, a), AppendKey(nil, b)) {
		t.Error("{1.0} and {1.00} differ")
	}
	if Compare(arr(Int4Array, "{1,2}"), arr(Int8Array, "{1,3}")) >= 0 {
		t.Error("int4[] and int8[] compare by element")
	}
}

func TestArrayCastAndJSON(t *testing.T) {
	v, err := ParseText(Int4Array, "{1,NULL,3}")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Cast(v, Int8Array)
	if err != nil || w.K != Int8Array || w.Text() != "{1,NULL,3}" {
		t.Errorf("int4[] to int8[] = %s, %v", w, err)
	}
	s, err := Cast(v, Text)
	if err != nil || s.S != "{1,NULL,3}" {
		t.Errorf("int4[] to text = %s, %v", s, err)
	}
	if !CanCast(Int4Array, TextArray) || CanCast(Int4Array, Int4) || CanCast(Int4, Int4Array) {
		t.Error("CanCast of arrays")
	}
	if _, err := Cast(NewArray(Int8Array, []Value{NewInt8(1 << 40)}), Int4Array); pgerror.CodeOf(err) != pgerror.NumericValueOutOfRange {
		t.Errorf("element out of range: %v", err)
	}
	if got := string(AppendJSONValue(nil, v)); got != "[1,null,3]" {
		t.Errorf("JSON = %s", got)
	}
	c := NewJSONCodec([]string{"a", "t"}, []Type{Int8Array, TextArray})
	row := make(Row, 2)
	if err := c.Decode([]byte(`{"a": [1, null, 2], "t": ["x", "y z"]}`), row); err != nil {
		t.Fatal(err)
	}
	if row[0].Text() != "{1,NULL,2}" || row[1].Text() != `{x,"y z"}` {
		t.Errorf("decoded %s %s", row[0], row[1])
	}
	if got := string(c.Append(nil, row)); got != `{"a":[1,null,2],"t":["x","y z"]}` {
		t.Errorf("encoded %s", got)
	}
	if err := c.Decode([]byte(`{"a": "{4,5}"}`), row); err != nil || row[0].Text() != "{4,5}" {
		t.Errorf("array literal in a JSON string: %s, %v", row[0], err)
	}
}

func TestRegtype(t *testing.T) {
	for in, want := range map[string]string{
		"int4": "integer", "pg_catalog.text": "text", "integer[]": "integer[]", "23": "integer",
		"pg_catalog.trigger": "trigger", "cstring": "cstring", "99999": "99999",
	} {
		v, err := ParseText(Regtype, in)
		if err != nil || v.Text() != want {
			t.Errorf("regtype %q = %s, %v; want %s", in, v, err, want)
		}
	}
	if _, err := ParseText(Regtype, "nosuchtype"); pgerror.CodeOf(err) != pgerror.UndefinedObject {
		t.Errorf("unknown type: %v", err)
	}
	r, _ := ParseText(Regtype, "int4")
	if Compare(r, NewInt(Oid, 23)) != 0 {
		t.Error("regtype compares with oid by value")
	}
	o, err := Cast(r, Oid)
	if err != nil || o.Text() != "23" {
		t.Errorf("regtype::oid = %s, %v", o, err)
	}
}
