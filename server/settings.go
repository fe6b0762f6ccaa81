package server

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fvsql/fvsql/pgerror"
)

// defaultSettings are the session settings with their initial values.
// Those in reported are announced with ParameterStatus when they change.
var defaultSettings = map[string]string{
	"application_name":                    "",
	"client_encoding":                     "UTF8",
	"datestyle":                           "ISO, MDY",
	"intervalstyle":                       "postgres",
	"timezone":                            "UTC",
	"search_path":                         "\"$user\", public",
	"standard_conforming_strings":         "on",
	"extra_float_digits":                  "1",
	"server_version":                      ServerVersion,
	"server_version_num":                  "150000",
	"server_encoding":                     "UTF8",
	"integer_datetimes":                   "on",
	"transaction_isolation":               "serializable",
	"default_transaction_isolation":       "serializable",
	"transaction_read_only":               "off",
	"is_superuser":                        "on",
	"lc_collate":                          "C",
	"lc_ctype":                            "C",
	"max_identifier_length":               "63",
	"statement_timeout":                   "0",
	"bytea_output":                        "hex",
	"client_min_messages":                 "notice",
	"row_security":                        "on",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
}

// settingNames gives the display spelling of settings whose name has capitals.
var settingNames = map[string]string{"datestyle": "DateStyle", "intervalstyle": "IntervalStyle", "timezone": "TimeZone"}

var reported = map[string]bool{
	"application_name": true, "client_encoding": true, "datestyle": true, "intervalstyle": true,
	"timezone": true, "standard_conforming_strings": true, "is_superuser": true, "integer_datetimes": true,
}

// readOnly settings are reported but cannot be set.
var readOnly = map[string]bool{
	"server_version": true, "server_version_num": true, "server_encoding": true, "integer_datetimes": true,
	"lc_collate": true, "lc_ctype": true, "max_identifier_length": true, "is_superuser": true,
}

// set validates and applies one SET.
func (s *session) set(name, value string) error {
	name = strings.ToLower(name)
	if name == "all" && strings.EqualFold(value, "default") { // RESET ALL
		for k := range s.settings {
			if readOnly[k] {
				continue
			}
			if _, ok := defaultSettings[k]; !ok {
				delete(s.settings, k) // a custom setting SET in this session
				continue
			}
			if err := s.set(k, "default"); err != nil {
				return err
			}
		}
		return nil
	}
	if _, ok := defaultSettings[name]; !ok {
		if strings.Contains(name, ".") { // custom (extension) settings are free-form, as PostgreSQL allows
			s.settings[name] = value
			return nil
		}
		return pgerror.New(pgerror.UndefinedObject, "unrecognized configuration parameter %q", name)
	}
	if readOnly[name] {
		return pgerror.New(pgerror.CantChangeRuntimeParam, "parameter %q cannot be changed", name)
	}
	if strings.EqualFold(value, "default") {
		// RESET and SET … TO DEFAULT: the value the session started with.
		value = defaultSettings[name]
		if v, ok := s.reset[name]; ok {
			value = v
		}
	}
	switch name {
	case "client_encoding":
		if v := strings.ToUpper(strings.ReplaceAll(value, "-", "")); v != "UTF8" && v != "UNICODE" {
			return pgerror.New(pgerror.FeatureNotSupported, "client_encoding %q is not supported: fvsql speaks UTF8 only", value)
		}
		value = "UTF8"
	case "timezone":
		if u := strings.ToUpper(value); u != "UTC" && u != "GMT" && u != "ETC/UTC" && u != "Z" && value != "0" && u != "+00" && u != "00:00" {
			return pgerror.New(pgerror.FeatureNotSupported, "TimeZone %q is not supported yet: fvsql sessions run in UTC", value)
		}
		value = "UTC"
	case "datestyle":
		if !strings.Contains(strings.ToUpper(value), "ISO") {
			return pgerror.New(pgerror.FeatureNotSupported, "DateStyle %q is not supported yet: fvsql uses ISO, MDY", value)
		}
		value = "ISO, MDY"
	case "intervalstyle":
		if !strings.EqualFold(value, "postgres") {
			return pgerror.New(pgerror.FeatureNotSupported, "IntervalStyle %q is not supported yet", value)
		}
	case "statement_timeout":
		ms, err := parseMillis(name, value)
		if err != nil {
			return err
		}
		value = formatMillis(ms)
	case "standard_conforming_strings":
		if !strings.EqualFold(value, "on") {
			return pgerror.New(pgerror.FeatureNotSupported, "standard_conforming_strings must be on")
		}
	case "default_transaction_isolation", "transaction_isolation":
		// Recorded and shown, as clients read them back (pgjdbc's
		// getTransactionIsolation); fvsql's reads are snapshots of each
		// statement's start whatever the level.
		v := strings.ToLower(strings.Join(strings.Fields(value), " "))
		switch v {
		case "serializable", "repeatable read", "read committed", "read uncommitted":
		default:
			return pgerror.New(pgerror.InvalidParameterValue, "invalid value for parameter %q: %q", name, value).
				WithHint("Available values: serializable, repeatable read, read committed, read uncommitted.")
		}
		value = v
		if name == "default_transaction_isolation" && s.tx == 'I' {
			s.settings["transaction_isolation"] = v
		}
	}
	s.settings[name] = value
	if reported[name] {
		s.changed[name] = true
	}
	return nil
}

func (s *session) setting(name string) (string, error) {
	name = strings.ToLower(name)
	if v, ok := s.settings[name]; ok {
		return v, nil
	}
	return "", pgerror.New(pgerror.UndefinedObject, "unrecognized configuration parameter %q", name)
}

func displayName(name string) string {
	if d, ok := settingNames[name]; ok {
		return d
	}
	return name
}

func sortedSettings(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// parseMillis reads a time setting as PostgreSQL does: an integer or a
// decimal with an optional unit (us, ms, s, min, h, d; none: ms), within
// 0 .. 2147483647 ms.
func parseMillis(name, value string) (int64, error) {
	bad := func() error {
		return pgerror.New(pgerror.InvalidParameterValue, "invalid value for parameter %q: %q", name, value).
			WithHint("Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".")
	}
	v := strings.TrimSpace(value)
	num := strings.TrimRight(v, "abcdefghijklmnopqrstuvwxyz")
	unit := strings.TrimSpace(v[len(num):])
	num = strings.TrimSpace(num)
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" || strings.ContainsAny(num, "eEnN") {
		return 0, bad()
	}
	scale := map[string]float64{"": 1, "us": 0.001, "ms": 1, "s": 1000, "min": 60000, "h": 3600000, "d": 86400000}
	m, ok := scale[unit]
	if !ok {
		return 0, bad()
	}
	ms := f * m
	if ms > 0 && ms < 1 {
		ms = 1 // a positive value never rounds to "off"
	}
	if ms < 0 || ms > 2147483647 {
		return 0, pgerror.New(pgerror.InvalidParameterValue, "%s ms is outside the valid range for parameter %q (0 .. 2147483647)", strconv.FormatFloat(ms, 'f', -1, 64), name)
	}
	return int64(ms + 0.5), nil
}

// formatMillis shows a time setting as SHOW does: in the largest unit
// that divides it.
func formatMillis(ms int64) string {
	if ms == 0 {
		return "0"
	}
	for _, u := range []struct {
		n    int64
		name string
	}{{86400000, "d"}, {3600000, "h"}, {60000, "min"}, {1000, "s"}} {
		if ms%u.n == 0 {
			return strconv.FormatInt(ms/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// statementTimeout is the session's statement_timeout (0: none).
func (s *session) statementTimeout() time.Duration {
	ms, err := parseMillis("statement_timeout", s.settings["statement_timeout"])
	if err != nil {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// errStatementTimeout ends a statement that ran past statement_timeout.
var errStatementTimeout = pgerror.New(pgerror.QueryCanceled, "canceling statement due to statement timeout")

// startupOptions reads the "options" startup parameter as PostgreSQL
// does: command-line switches separated by spaces (a backslash escapes
// the next character), of which "-c name=value" and "--name=value" set
// settings. Other switches are ignored.
func startupOptions(opts string) map[string]string {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(opts); i++ {
		c := opts[i]
		switch {
		case c == '\\' && i+1 < len(opts):
			i++
			cur.WriteByte(opts[i])
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	out := map[string]string{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		var kv string
		switch {
		case w == "-c" && i+1 < len(words):
			i++
			kv = words[i]
		case strings.HasPrefix(w, "-c"):
			kv = w[2:]
		case strings.HasPrefix(w, "--"):
			kv = w[2:]
		default:
			continue
		}
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[strings.ReplaceAll(strings.ToLower(k), "-", "_")] = v
		}
	}
	return out
}
