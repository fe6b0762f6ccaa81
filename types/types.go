package types

import (
	"strings"

	"github.com/fvsql/fvsql/pgerror"
)

// Type is a SQL type. The zero value, Null, is the type of an untyped NULL.
type Type uint8

// The SQL types fvsql stores and computes with.
const (
	Null    Type = iota
	Unknown      // a quoted literal whose type the context decides (PostgreSQL's "unknown")
	Bool
	Int2
	Int4
	Int8
	Float4
	Float8
	Numeric
	Text
	Varchar
	Bytea
	Date
	Timestamp
	TimestampTZ
	Interval
	JSONB
	Oid  // object identifiers in pg_catalog
	Name // pg_catalog's 63-byte identifier type
	Char // pg_catalog's "char"
	TextArray
	Int2Array // int2vector-like columns of pg_catalog
	OidArray
	// Arrays of the other element types (appended: type codes are stored
	// in plans and operator state, so existing codes never change).
	BoolArray
	Int4Array
	Int8Array
	Float4Array
	Float8Array
	NumericArray
	VarcharArray
	ByteaArray
	DateArray
	TimestampArray
	TimestampTZArray
	IntervalArray
	JSONBArray
	NameArray
	CharArray
	// Regtype is an OID shown as a type name (pg_catalog.regtype).
	Regtype
	RegtypeArray
	// AnyArray and AnyElement are the polymorphic pseudo-types of
	// function signatures (anyarray, anyelement); no value has them.
	AnyArray
	AnyElement
	// Record is an anonymous composite (PostgreSQL's record): a row of
	// fields of any types, see record.go.
	Record
	// Int2Vector and OidVector are pg_catalog's int2vector and oidvector
	// (pg_index.indkey, pg_proc.proargtypes): arrays of int2 and oid whose
	// text form is the elements separated by spaces ("25 23"), see
	// vector.go.
	Int2Vector
	OidVector
	numTypes
)

// info describes one type for the wire and for the catalog.
type info struct {
	name    string // the name format_type and error messages use
	typname string // pg_type.typname, when it differs from name
	oid     uint32
	arrOID  uint32
	elem    Type  // for array types, the element type
	size    int16 // pg_type.typlen
	binary  bool  // whether fvsql can send it in binary format
	typcat  string
	pseudo  bool // a pseudo-type of function signatures only
}

var infos = [numTypes]info{
	Null:        {name: "unknown", oid: 705, size: -2, typcat: "X"},
	Unknown:     {name: "unknown", oid: 705, size: -2, typcat: "X"},
	Bool:        {name: "boolean", typname: "bool", oid: 16, arrOID: 1000, size: 1, binary: true, typcat: "B"},
	Int2:        {name: "smallint", typname: "int2", oid: 21, arrOID: 1005, size: 2, binary: true, typcat: "N"},
	Int4:        {name: "integer", typname: "int4", oid: 23, arrOID: 1007, size: 4, binary: true, typcat: "N"},
	Int8:        {name: "bigint", typname: "int8", oid: 20, arrOID: 1016, size: 8, binary: true, typcat: "N"},
	Float4:      {name: "real", typname: "float4", oid: 700, arrOID: 1021, size: 4, binary: true, typcat: "N"},
	Float8:      {name: "double precision", typname: "float8", oid: 701, arrOID: 1022, size: 8, binary: true, typcat: "N"},
	Numeric:     {name: "numeric", oid: 1700, arrOID: 1231, size: -1, binary: true, typcat: "N"},
	Text:        {name: "text", oid: 25, arrOID: 1009, size: -1, binary: true, typcat: "S"},
	Varchar:     {name: "character varying", typname: "varchar", oid: 1043, arrOID: 1015, size: -1, binary: true, typcat: "S"},
	Bytea:       {name: "bytea", oid: 17, arrOID: 1001, size: -1, binary: true, typcat: "U"},
	Date:        {name: "date", oid: 1082, arrOID: 1182, size: 4, binary: true, typcat: "D"},
	Timestamp:   {name: "timestamp without time zone", typname: "timestamp", oid: 1114, arrOID: 1115, size: 8, binary: true, typcat: "D"},
	TimestampTZ: {name: "timestamp with time zone", typname: "timestamptz", oid: 1184, arrOID: 1185, size: 8, binary: true, typcat: "D"},
	Interval:    {name: "interval", oid: 1186, arrOID: 1187, size: 16, binary: true, typcat: "T"},
	JSONB:       {name: "jsonb", oid: 3802, arrOID: 3807, size: -1, binary: true, typcat: "U"},
	Oid:         {name: "oid", oid: 26, arrOID: 1028, size: 4, binary: true, typcat: "N"},
	Name:        {name: "name", oid: 19, arrOID: 1003, size: 64, binary: true, typcat: "S"},
	Char:        {name: "\"char\"", typname: "char", oid: 18, arrOID: 1002, size: 1, binary: true, typcat: "Z"},
	Regtype:     {name: "regtype", oid: 2206, arrOID: 2211, size: 4, binary: true, typcat: "N"},
	AnyArray:    {name: "anyarray", oid: 2277, size: -1, typcat: "P", pseudo: true},
	AnyElement:  {name: "anyelement", oid: 2283, size: 4, typcat: "P", pseudo: true},
	Record:      {name: "record", oid: 2249, arrOID: 2287, size: -1, typcat: "P"},
	Int2Vector:  {name: "int2vector", oid: 22, arrOID: 1006, elem: Int2, size: -1, binary: true, typcat: "A"},
	OidVector:   {name: "oidvector", oid: 30, arrOID: 1013, elem: Oid, size: -1, binary: true, typcat: "A"},
}

// arrayTypes pairs each array type with its element type.
var arrayTypes = map[Type]Type{
	TextArray: Text, Int2Array: Int2, OidArray: Oid, BoolArray: Bool, Int4Array: Int4,
	Int8Array: Int8, Float4Array: Float4, Float8Array: Float8, NumericArray: Numeric,
	VarcharArray: Varchar, ByteaArray: Bytea, DateArray: Date, TimestampArray: Timestamp,
	TimestampTZArray: TimestampTZ, IntervalArray: Interval, JSONBArray: JSONB,
	NameArray: Name, CharArray: Char, RegtypeArray: Regtype,
}

// arrayOf is the inverse of arrayTypes.
var arrayOf [numTypes]Type

func init() {
	for arr, elem := range arrayTypes {
		e := infos[elem]
		infos[arr] = info{name: e.name + "[]", typname: "_" + elem.TypName(), oid: e.arrOID,
			elem: elem, size: -1, binary: e.binary, typcat: "A"}
		arrayOf[elem] = arr
	}
	for t := Bool; t < numTypes; t++ {
		// typnames not yet taken: char stays SQL's character type, not
		// pg_catalog's "char" (whose typname it is)
		if _, taken := typeNames[t.TypName()]; !taken && !infos[t].pseudo {
			typeNames[t.TypName()] = t
		}
	}
}

// OID is the type's PostgreSQL object identifier.
func (t Type) OID() uint32 { return infos[t].oid }

// ArrayOID is the OID of the array type over t, or 0.
func (t Type) ArrayOID() uint32 { return infos[t].arrOID }

// Size is pg_type.typlen: the fixed width, or -1 for varlena, -2 for cstring-like.
func (t Type) Size() int16 { return infos[t].size }

// Category is pg_type.typcategory.
func (t Type) Category() string { return infos[t].typcat }

// TypName is pg_type.typname: int4, _text, varchar…
func (t Type) TypName() string {
	if n := infos[t].typname; n != "" {
		return n
	}
	return infos[t].name
}

// Elem is the element type of an array type, or Null for other types.
func (t Type) Elem() Type { return infos[t].elem }

// IsVector reports whether t is int2vector or oidvector.
func (t Type) IsVector() bool { return t == Int2Vector || t == OidVector }

// IsArray reports whether t is an array type.
func (t Type) IsArray() bool { return infos[t].elem != Null }

// IsPseudo reports whether t is a pseudo-type (anyarray, anyelement).
func (t Type) IsPseudo() bool { return infos[t].pseudo }

// ArrayOf is the array type over elem, or Null when fvsql has none
// (arrays of arrays, of unknown…).
func ArrayOf(elem Type) Type { return arrayOf[elem] }

// HasBinary reports whether values of t can be sent in binary format.
func (t Type) HasBinary() bool { return infos[t].binary }

// String is the type's SQL name as PostgreSQL's format_type prints it.
func (t Type) String() string { return infos[t].name }

// IsNumeric reports whether t is one of the number types.
func (t Type) IsNumeric() bool {
	switch t {
	case Int2, Int4, Int8, Float4, Float8, Numeric, Oid:
		return true
	}
	return false
}

// IsInteger reports whether t is an integer type.
func (t Type) IsInteger() bool { return t == Int2 || t == Int4 || t == Int8 || t == Oid }

// IsOID reports whether t holds an object identifier (oid, regtype).
func (t Type) IsOID() bool { return t == Oid || t == Regtype }

// IsFloat reports whether t is a floating point type.
func (t Type) IsFloat() bool { return t == Float4 || t == Float8 }

// IsString reports whether t holds character data.
func (t Type) IsString() bool {
	return t == Text || t == Varchar || t == Name || t == Char || t == Unknown
}

// IsTime reports whether t is a point-in-time type.
func (t Type) IsTime() bool { return t == Timestamp || t == TimestampTZ || t == Date }

// ByOID returns the type with the given OID.
func ByOID(oid uint32) (Type, bool) {
	for t := Bool; t < numTypes; t++ {
		if infos[t].oid == oid {
			return t, true
		}
	}
	if oid == 1042 { // bpchar: treat as text
		return Text, true
	}
	if oid == 705 {
		return Unknown, true
	}
	return Null, false
}

// All lists the types a user can name, for pg_type (pseudo-types last).
func All() []Type {
	out := make([]Type, 0, numTypes)
	for t := Bool; t < numTypes; t++ {
		if !t.IsPseudo() {
			out = append(out, t)
		}
	}
	for t := Bool; t < numTypes; t++ {
		if t.IsPseudo() {
			out = append(out, t)
		}
	}
	return out
}

var typeNames = map[string]Type{
	"bool": Bool, "boolean": Bool,
	"int2": Int2, "smallint": Int2,
	"int4": Int4, "int": Int4, "integer": Int4, "serial": Int4,
	"int8": Int8, "bigint": Int8, "bigserial": Int8,
	"float4": Float4, "real": Float4, "float": Float8,
	"float8": Float8, "double precision": Float8, "double": Float8,
	"numeric": Numeric, "decimal": Numeric,
	"text": Text, "string": Text, "bpchar": Text, "character": Text, "char": Text,
	"varchar": Varchar, "character varying": Varchar,
	"bytea":                       Bytea,
	"date":                        Date,
	"timestamp":                   Timestamp,
	"timestamp without time zone": Timestamp,
	"timestamptz":                 TimestampTZ,
	"timestamp with time zone":    TimestampTZ,
	"interval":                    Interval,
	"jsonb":                       JSONB, "json": JSONB,
	"oid": Oid, "regclass": Oid, "regproc": Oid, "regprocedure": Oid, "regnamespace": Oid,
	"regrole": Oid, "regoper": Oid, "regoperator": Oid, "regconfig": Oid, "regdictionary": Oid,
	"regtype":  Regtype,
	"name":     Name,
	"\"char\"": Char,
}

// Parse resolves a SQL type name (case-insensitive, with optional
// pg_catalog. prefix and length/precision modifiers, which are accepted
// and not enforced) to a Type. It fails with 42704.
func Parse(name string) (Type, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "pg_catalog.")
	if i := strings.IndexByte(n, '('); i >= 0 {
		if j := strings.IndexByte(n[i:], ')'); j >= 0 {
			n = strings.TrimSpace(n[:i] + n[i+j+1:])
		}
	}
	n = strings.Join(strings.Fields(n), " ")
	if t, ok := typeNames[n]; ok {
		return t, nil
	}
	// t[] and t[n] (any number of dimensions: PostgreSQL does not enforce
	// them either), and t ARRAY.
	base, dims := n, 0
	for {
		if b, ok := strings.CutSuffix(base, "]"); ok {
			if i := strings.LastIndexByte(b, '['); i >= 0 {
				base, dims = strings.TrimSpace(b[:i]), dims+1
				continue
			}
		}
		if b, ok := strings.CutSuffix(base, " array"); ok {
			base, dims = b, dims+1
			continue
		}
		break
	}
	if dims > 0 {
		if elem, err := Parse(base); err == nil && ArrayOf(elem) != Null {
			return ArrayOf(elem), nil
		}
	}
	return Null, pgerror.New(pgerror.UndefinedObject, "type %q does not exist", name)
}
