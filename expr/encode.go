package expr

import (
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// encode(bytea, format) and decode(text, format), PostgreSQL's binary
// string conversions: base64 (encode breaks lines at 76 characters,
// decode ignores whitespace), hex and escape.
func init() {
	Register(
		&Func{Name: "encode", Args: []types.Type{types.Bytea, types.Text}, Ret: types.Text, Eval2: encodeBytes},
		&Func{Name: "decode", Args: []types.Type{types.Text, types.Text}, Ret: types.Bytea, Eval2: decodeText},
	)
}

func unknownEncoding(f string) error {
	return pgerror.New(pgerror.InvalidParameterValue, "unrecognized encoding: %q", f).
		WithHint(`Valid encodings are "base64", "escape", and "hex".`)
}

func encodeBytes(data, format types.Value) (types.Value, error) {
	b := data.S
	switch f := strings.ToLower(format.S); f {
	case "base64":
		if err := checkSize("encode", int64(len(b))*4/3+int64(len(b))/57+4); err != nil {
			return types.NullValue, err
		}
		enc := base64.StdEncoding.EncodeToString([]byte(b))
		var sb strings.Builder
		for len(enc) > 76 {
			sb.WriteString(enc[:76])
			sb.WriteByte('\n')
			enc = enc[76:]
		}
		sb.WriteString(enc)
		return types.NewText(sb.String()), nil
	case "hex":
		if err := checkSize("encode", 2*int64(len(b))); err != nil {
			return types.NullValue, err
		}
		return types.NewText(hex.EncodeToString([]byte(b))), nil
	case "escape":
		if err := checkSize("encode", 4*int64(len(b))); err != nil {
			return types.NullValue, err
		}
		var sb strings.Builder
		for i := 0; i < len(b); i++ {
			c := b[i]
			switch {
			case c == '\\':
				sb.WriteString(`\\`)
			case c == 0 || c >= 0x80:
				sb.WriteByte('\\')
				sb.WriteByte('0' + c>>6)
				sb.WriteByte('0' + c>>3&7)
				sb.WriteByte('0' + c&7)
			default:
				sb.WriteByte(c)
			}
		}
		return types.NewText(sb.String()), nil
	default:
		return types.NullValue, unknownEncoding(f)
	}
}

func decodeText(data, format types.Value) (types.Value, error) {
	s := data.S
	switch f := strings.ToLower(format.S); f {
	case "base64":
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, s)
		b, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return types.NullValue, pgerror.New(pgerror.InvalidParameterValue, "invalid base64 input: %v", err)
		}
		return types.NewBytea(b), nil
	case "hex":
		b, err := types.DecodeByteaHex(s)
		if err != nil {
			return types.NullValue, err
		}
		return types.NewBytea([]byte(b)), nil
	case "escape":
		b, err := types.DecodeByteaEscape(s)
		if err != nil {
			return types.NullValue, err
		}
		return types.NewBytea([]byte(b)), nil
	default:
		return types.NullValue, unknownEncoding(f)
	}
}
