package engine

import (
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/types"
)

// fillMeta writes a record's metadata into the last MetaWidth values.
func fillMeta(row types.Row, key []byte, part int32, offset int64, ts int64) {
	n := len(row) - plan.MetaWidth
	if key != nil {
		// record bytes are never modified: the text can point into them
		if len(key) > 0 && utf8.Valid(key) {
			row[n] = types.NewText(unsafe.String(&key[0], len(key)))
		} else {
			row[n] = types.NewText(strings.ToValidUTF8(string(key), "\uFFFD"))
		}
	} else {
		row[n] = types.NullValue
	}
	row[n+1] = types.NewInt(types.Int4, int64(part))
	row[n+2] = types.NewInt8(offset)
	row[n+3] = types.NewTimestamp(types.TimestampTZ, ts)
}
