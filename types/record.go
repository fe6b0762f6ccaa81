package types

// A record (an anonymous composite, PostgreSQL's record) holds its
// fields in S as an array holds its elements: a uvarint count, then
// AppendValue of each field, whose own type it keeps. Field names are
// not part of the value: the planner knows them from the expression that
// built it (a set-returning function of several columns in a select
// list). Records are output only, in text: no binary form, no input, no
// cast.

// NewRecord returns a record of fields.
func NewRecord(fields []Value) Value { return Value{K: Record, S: encodeValues(fields)} }

// Fields decodes a record's fields (nil for NULL or another type).
func (v Value) Fields() []Value {
	if v.K != Record {
		return nil
	}
	return decodeValues(v.S)
}

// appendRecordText writes PostgreSQL's record_out form: (1,,"a b"),
// a NULL field empty, a field quoted when it is empty or holds one of
// ( ) , " \ or white space, with " and \ doubled inside quotes.
func appendRecordText(buf []byte, v Value) []byte {
	buf = append(buf, '(')
	for i, f := range v.Fields() {
		if i > 0 {
			buf = append(buf, ',')
		}
		if f.K == Null {
			continue
		}
		start := len(buf)
		buf = AppendText(buf, f)
		if !recordFieldNeedsQuotes(buf[start:]) {
			continue
		}
		buf = quoteFrom(buf, start, 0)
	}
	return append(buf, ')')
}

func recordFieldNeedsQuotes(s []byte) bool {
	if len(s) == 0 {
		return true
	}
	for _, c := range s {
		switch c {
		case '(', ')', ',', '"', '\\', ' ', '\t', '\n', '\r', '\v', '\f':
			return true
		}
	}
	return false
}
