package types

// RecordKey is the record key fvsql gives a row of a keyed stream, on
// every path that writes one (INSERT, a pipeline's output, a changes
// stream): the text of its key column, or, for several key columns, a
// JSON array of their values as AppendJSONValue writes them. A NULL single
// key, and a stream without key columns, give no key (nil), which spreads
// records over partitions.
//
// The partitioner hashes these bytes, so every writer must build them
// here: two encodings of one key would put its rows on two partitions.
// TestRecordKeyBytes pins them.
func RecordKey(row Row, keyCols []int) []byte {
	switch len(keyCols) {
	case 0:
		return nil
	case 1:
		v := row[keyCols[0]]
		if v.IsNull() {
			return nil
		}
		return []byte(v.Text())
	}
	buf := []byte{'['}
	for i, c := range keyCols {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = AppendJSONValue(buf, row[c])
	}
	return append(buf, ']')
}
