package server

import (
	"sort"
	"strings"

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
		value = defaultSettings[name]
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
	case "standard_conforming_strings":
		if !strings.EqualFold(value, "on") {
			return pgerror.New(pgerror.FeatureNotSupported, "standard_conforming_strings must be on")
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
