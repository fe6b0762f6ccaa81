package expr

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/types"
)

// Patterns are nearly always constants, so compiled regexps are cached by
// pattern text; the cache is bounded to keep hostile queries from growing it.
var patternCache = struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}{m: map[string]*regexp.Regexp{}}

// longestKey starts the cache key of a pattern that matches leftmost-
// longest, as PostgreSQL's substring(s FROM pattern) does (a|ab on "ab"
// is "ab"), not leftmost-first as Go's default.
const longestKey = "S"

func cachedRegexp(key, expr string) (*regexp.Regexp, error) {
	patternCache.Lock()
	re, ok := patternCache.m[key]
	patternCache.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, pgerror.New(pgerror.InvalidRegularExpression, "invalid regular expression: %v", err)
	}
	if strings.HasPrefix(key, longestKey) {
		re.Longest()
	}
	patternCache.Lock()
	if len(patternCache.m) > 4096 {
		patternCache.m = map[string]*regexp.Regexp{}
	}
	patternCache.m[key] = re
	patternCache.Unlock()
	return re, nil
}

// likeMatch implements LIKE/ILIKE with % and _ wildcards and backslash
// escapes.
func likeMatch(s, pattern string, ci bool) (bool, error) {
	// Fast paths for the common shapes: 'abc', 'abc%', '%abc', '%abc%'.
	if !ci && !strings.ContainsAny(pattern, "_\\") {
		inner := strings.Trim(pattern, "%")
		if !strings.Contains(inner, "%") {
			pre := strings.HasPrefix(pattern, "%")
			suf := strings.HasSuffix(pattern, "%") && len(pattern) > len(inner)+btoi(pre)
			switch {
			case pre && suf:
				return strings.Contains(s, inner), nil
			case pre:
				return strings.HasSuffix(s, inner), nil
			case suf:
				return strings.HasPrefix(s, inner), nil
			default:
				return s == pattern, nil
			}
		}
	}
	var sb strings.Builder
	if ci {
		sb.WriteString("(?is)^")
	} else {
		sb.WriteString("(?s)^")
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '%':
			sb.WriteString(".*")
		case '_':
			sb.WriteString(".")
		case '\\':
			if i+1 >= len(pattern) {
				return false, pgerror.New(pgerror.InvalidEscapeSequence, "LIKE pattern must not end with escape character")
			}
			i++
			sb.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		default:
			sb.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	sb.WriteString("$")
	key := "L" + string(btoc(ci)) + pattern
	re, err := cachedRegexp(key, sb.String())
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}

// likeEscape rewrites a pattern whose escape character is esc (LIKE …
// ESCAPE esc) into one with the default escape, backslash: like_escape in
// PostgreSQL. An empty esc means no escape character at all.
func likeEscape(pattern, esc string) (string, error) {
	if esc == `\` {
		return pattern, nil
	}
	if utf8.RuneCountInString(esc) > 1 {
		return "", pgerror.New(pgerror.InvalidEscapeSequence, "invalid escape string").
			WithHint("Escape string must be empty or one character.")
	}
	e, _ := utf8.DecodeRuneInString(esc)
	var sb strings.Builder
	sb.Grow(len(pattern) + 4)
	escaped := false
	for _, r := range pattern {
		switch {
		case escaped:
			escaped = false
			if r == '%' || r == '_' || r == '\\' {
				sb.WriteByte('\\')
			}
			sb.WriteRune(r)
		case esc != "" && r == e:
			escaped = true
		case r == '\\':
			sb.WriteString(`\\`) // a literal backslash
		default:
			sb.WriteRune(r)
		}
	}
	if escaped {
		return "", pgerror.New(pgerror.InvalidEscapeSequence, "LIKE pattern must not end with escape character")
	}
	return sb.String(), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func btoc(b bool) byte {
	if b {
		return 'i'
	}
	return 'c'
}

// regexMatch implements the ~ and ~* operators (POSIX regular expressions,
// approximated by Go's RE2 syntax).
func regexMatch(s, pattern string, ci bool) (bool, error) {
	expr := pattern
	if ci {
		expr = "(?i)" + pattern
	}
	re, err := cachedRegexp("R"+string(btoc(ci))+pattern, expr)
	if err != nil {
		return false, err
	}
	return re.MatchString(s), nil
}

// regexSubstring implements substring(s FROM pattern), the POSIX regular
// expression form: the part of s that the first parenthesized
// subexpression matched, or the whole match when there is none; NULL
// when the pattern does not match.
func regexSubstring(s, pattern string) (types.Value, error) {
	re, err := cachedRegexp(longestKey+pattern, pattern)
	if err != nil {
		return types.NullValue, err
	}
	m := re.FindStringSubmatchIndex(s)
	switch {
	case m == nil:
		return types.NullValue, nil
	case len(m) > 2:
		if m[2] < 0 {
			return types.NullValue, nil
		}
		return types.NewText(s[m[2]:m[3]]), nil
	}
	return types.NewText(s[m[0]:m[1]]), nil
}

// jsonField implements jsonb -> 'key' and ->> 'key' (and array indexes
// given as text digits).
func jsonField(doc types.Value, key string, asText bool) (types.Value, error) {
	var v any
	if err := json.Unmarshal([]byte(doc.S), &v); err != nil {
		return types.NullValue, pgerror.New(pgerror.InvalidTextRepresentation, "invalid jsonb value")
	}
	var field any
	switch o := v.(type) {
	case map[string]any:
		f, ok := o[key]
		if !ok {
			return types.NullValue, nil
		}
		field = f
	default: // an array's elements are x -> int (jsonElement)
		return types.NullValue, nil
	}
	if field == nil {
		if asText {
			return types.NullValue, nil
		}
		return types.NewJSONB("null"), nil
	}
	if s, ok := field.(string); ok && asText {
		return types.NewText(s), nil
	}
	raw, _ := json.Marshal(field)
	norm, err := types.NormalizeJSON(raw)
	if err != nil {
		return types.NullValue, err
	}
	if asText {
		return types.NewText(norm), nil
	}
	return types.NewJSONB(norm), nil
}
