package catalog

import (
	"context"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/types"
)

// pg_settings: the settings SHOW ALL shows, with PostgreSQL 15's
// descriptions of them, and the read-only ones clients probe
// (max_index_keys, which pgjdbc's getImportedKeys reads).
//
// The values are the session's when the server gives the catalog a way
// to read them (SetSettingsSource); otherwise every row shows the value a
// session starts with.

// setting is what pg_settings says of one setting besides its value.
type setting struct {
	name, unit, category, desc, extra, context, vartype, min, max string
	enumvals                                                      []string
	boot                                                          string // fvsql's value at session start
}

var (
	clientLocale    = "Client Connection Defaults / Locale and Formatting"
	clientStatement = "Client Connection Defaults / Statement Behavior"
	preset          = "Preset Options"
	isolations      = []string{"serializable", "repeatable read", "read committed", "read uncommitted"}
	timeoutExtra    = "A value of 0 turns off the timeout."
)

// settings are the settings, with PostgreSQL 15's metadata and fvsql's
// initial values (server/settings.go's defaultSettings).
var settings = []setting{
	{"application_name", "", "Reporting and Logging / What to Log", "Sets the application name to be reported in statistics and logs.", "", "user", "string", "", "", nil, ""},
	{"bytea_output", "", clientStatement, "Sets the output format for bytea.", "", "user", "enum", "", "", []string{"escape", "hex"}, "hex"},
	{"client_encoding", "", clientLocale, "Sets the client's character set encoding.", "", "user", "string", "", "", nil, "UTF8"},
	{"client_min_messages", "", clientStatement, "Sets the message levels that are sent to the client.", "Each level includes all the levels that follow it. The later the level, the fewer messages are sent.", "user", "enum", "", "", []string{"debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"}, "notice"},
	{"DateStyle", "", clientLocale, "Sets the display format for date and time values.", "Also controls interpretation of ambiguous date inputs.", "user", "string", "", "", nil, "ISO, MDY"},
	{"default_transaction_isolation", "", clientStatement, "Sets the transaction isolation level of each new transaction.", "", "user", "enum", "", "", isolations, "serializable"},
	{"extra_float_digits", "", clientLocale, "Sets the number of digits displayed for floating-point values.", "This affects real, double precision, and geometric data types. A zero or negative parameter value is added to the standard number of digits (FLT_DIG or DBL_DIG as appropriate). Any value greater than zero selects precise output mode.", "user", "integer", "-15", "3", nil, "1"},
	{"idle_in_transaction_session_timeout", "ms", clientStatement, "Sets the maximum allowed idle time between queries, when in a transaction.", timeoutExtra, "user", "integer", "0", "2147483647", nil, "0"},
	{"integer_datetimes", "", preset, "Shows whether datetimes are integer based.", "", "internal", "bool", "", "", nil, "on"},
	{"IntervalStyle", "", clientLocale, "Sets the display format for interval values.", "", "user", "enum", "", "", []string{"postgres", "postgres_verbose", "sql_standard", "iso_8601"}, "postgres"},
	{"lc_collate", "", preset, "Shows the collation order locale.", "", "internal", "string", "", "", nil, "C"},
	{"lc_ctype", "", preset, "Shows the character classification and case conversion locale.", "", "internal", "string", "", "", nil, "C"},
	{"lock_timeout", "ms", clientStatement, "Sets the maximum allowed duration of any wait for a lock.", timeoutExtra, "user", "integer", "0", "2147483647", nil, "0"},
	{"max_identifier_length", "", preset, "Shows the maximum identifier length.", "", "internal", "integer", "63", "63", nil, "63"},
	{"max_index_keys", "", preset, "Shows the maximum number of index keys.", "", "internal", "integer", "32", "32", nil, "32"},
	{"row_security", "", clientStatement, "Enable row security.", "When enabled, row security will be applied to all users.", "user", "bool", "", "", nil, "on"},
	{"search_path", "", clientStatement, "Sets the schema search order for names that are not schema-qualified.", "", "user", "string", "", "", nil, `"$user", public`},
	{"server_encoding", "", preset, "Shows the server (database) character set encoding.", "", "internal", "string", "", "", nil, "UTF8"},
	{"server_version", "", preset, "Shows the server version.", "", "internal", "string", "", "", nil, "15.0"},
	{"server_version_num", "", preset, "Shows the server version as an integer.", "", "internal", "integer", "150000", "150000", nil, "150000"},
	{"standard_conforming_strings", "", "Version and Platform Compatibility / Previous PostgreSQL Versions", "Causes '...' strings to treat backslashes literally.", "", "user", "bool", "", "", nil, "on"},
	{"statement_timeout", "ms", clientStatement, "Sets the maximum allowed duration of any statement.", timeoutExtra, "user", "integer", "0", "2147483647", nil, "0"},
	{"TimeZone", "", clientLocale, "Sets the time zone for displaying and interpreting time stamps.", "", "user", "string", "", "", nil, "UTC"},
	{"transaction_isolation", "", clientStatement, "Sets the current transaction's isolation level.", "", "user", "enum", "", "", isolations, "serializable"},
	{"transaction_read_only", "", clientStatement, "Sets the current transaction's read-only status.", "", "user", "bool", "", "", nil, "off"},
}

// SetSettingsSource gives the catalog the settings of the session whose
// query a context belongs to, by lower-case name, as SHOW shows them
// (nil when the context carries no session): pg_settings then shows the
// session's values. Custom settings (SET a.b = …) are not listed, as
// PostgreSQL lists no placeholder.
func (c *Catalog) SetSettingsSource(f func(ctx context.Context) map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setting = f
}

// inUnit is a time setting's value as pg_settings shows it: a number in
// the setting's unit (ms), where SHOW writes it in the largest unit that
// divides it ("5s").
func inUnit(v, unit string) string {
	if unit != "ms" {
		return v
	}
	for _, u := range []struct {
		suffix string
		ms     int64
	}{{"ms", 1}, {"min", 60000}, {"s", 1000}, {"h", 3600000}, {"d", 86400000}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			if i, err := strconv.ParseInt(n, 10, 64); err == nil {
				return strconv.FormatInt(i*u.ms, 10)
			}
		}
	}
	return v
}

func init() {
	registerSystemCtx("pg_catalog", "pg_settings", 13504, cols(`name text, setting text, unit text, category text,
		short_desc text, extra_desc text, context text, vartype text, source text, min_val text, max_val text,
		enumvals text[], boot_val text, reset_val text, sourcefile text, sourceline int4, pending_restart bool`),
		func(ctx context.Context, c *Catalog) []types.Row {
			c.mu.RLock()
			source := c.setting
			c.mu.RUnlock()
			var session map[string]string
			if source != nil {
				session = source(ctx)
			}
			var rows []types.Row
			for _, s := range settings {
				key := strings.ToLower(s.name)
				v, src := s.boot, "default"
				if sv, ok := session[key]; ok {
					v = inUnit(sv, s.unit)
					if v != s.boot {
						src = "session"
					}
				}
				if s.context == "internal" {
					src = "default"
				}
				var enum types.Value = types.NullValue
				if len(s.enumvals) > 0 {
					enum = textArray(s.enumvals)
				}
				rows = append(rows, types.Row{text(s.name), text(v), nullOr(s.unit), text(s.category),
					text(s.desc), nullOr(s.extra), text(s.context), text(s.vartype), text(src),
					nullOr(s.min), nullOr(s.max), enum, text(s.boot), text(s.boot), types.NullValue,
					types.NullValue, boolean(false)})
			}
			return rows
		})
	systemViews["pg_catalog.pg_settings"] = true
}
