package types

import (
	"encoding/json"
	"fmt"
)

// MarshalJSON encodes a value with its type, as ["type name", "text"], or
// null for NULL, so that plans holding constants round-trip through the
// catalog.
func (v Value) MarshalJSON() ([]byte, error) {
	if v.K == Null {
		return []byte("null"), nil
	}
	return json.Marshal([2]any{uint8(v.K), v.Text()})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*v = NullValue
		return nil
	}
	var pair [2]json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	var k uint8
	var text string
	if err := json.Unmarshal(pair[0], &k); err != nil {
		return err
	}
	if err := json.Unmarshal(pair[1], &text); err != nil {
		return err
	}
	if Type(k) >= numTypes {
		return fmt.Errorf("types: bad type %d in JSON value", k)
	}
	t := Type(k)
	parsed, err := ParseText(t, text)
	if err != nil {
		return err
	}
	if t == Unknown {
		parsed.K = Unknown
	}
	*v = parsed
	return nil
}
