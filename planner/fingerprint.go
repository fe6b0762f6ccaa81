package planner

import (
	"fmt"
	"reflect"
	"strings"
)

// fingerprint renders an AST expression structurally, so that two
// occurrences of the same expression (a GROUP BY term and a select item,
// repeated aggregate calls) can be matched.
func fingerprint(e any) string {
	var sb strings.Builder
	writeFingerprint(&sb, reflect.ValueOf(e))
	return sb.String()
}

func writeFingerprint(sb *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Invalid:
		sb.WriteString("nil")
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			sb.WriteString("nil")
			return
		}
		writeFingerprint(sb, v.Elem())
	case reflect.Struct:
		t := v.Type()
		if t.PkgPath() == "github.com/fvsql/fvsql/types" && v.CanInterface() {
			fmt.Fprintf(sb, "%v", v.Interface())
			return
		}
		sb.WriteString(t.Name())
		sb.WriteString("{")
		for i := 0; i < v.NumField(); i++ {
			if !t.Field(i).IsExported() || t.Field(i).Name == "Pos" {
				continue
			}
			sb.WriteString(t.Field(i).Name)
			sb.WriteString(":")
			writeFingerprint(sb, v.Field(i))
			sb.WriteString(" ")
		}
		sb.WriteString("}")
	case reflect.Slice:
		sb.WriteString("[")
		for i := 0; i < v.Len(); i++ {
			writeFingerprint(sb, v.Index(i))
			sb.WriteString(",")
		}
		sb.WriteString("]")
	default:
		fmt.Fprintf(sb, "%v", v.Interface())
	}
}
