package types

import (
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/pgerror"
)

// Zone is the time zone of AT TIME ZONE: a fixed offset or a named zone
// of the tz database.
type Zone struct {
	off int64 // east of UTC, in microseconds, when loc is nil
	loc *time.Location
}

// FixedZone is the zone off microseconds east of UTC (AT TIME ZONE
// INTERVAL '05:00').
func FixedZone(off int64) Zone { return Zone{off: off} }

var zoneIndex = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, n := range strings.Fields(zoneNames) {
		m[strings.ToLower(n)] = n
	}
	return m
})

// LookupZone reads a time zone as PostgreSQL's AT TIME ZONE and timezone()
// do: a common abbreviation (PST, CEST), a name of the tz database in
// any case (America/New_York, europe/paris, EST5EDT), Z, or a POSIX
// offset, [UTC|GMT]±h[h][:mm], whose sign is POSIX's: '+05' and 'UTC+5'
// are five hours west of Greenwich. Anything else is 22023, PostgreSQL's
// "not recognized".
func LookupZone(name string) (Zone, error) {
	s := strings.TrimSpace(name)
	if strings.EqualFold(s, "z") {
		return Zone{}, nil
	}
	if off, ok := zoneAbbrevs[strings.ToUpper(s)]; ok {
		return Zone{off: off * MicrosPerMinute}, nil
	}
	if canon, ok := zoneIndex()[strings.ToLower(s)]; ok {
		if loc, err := time.LoadLocation(canon); err == nil {
			return Zone{loc: loc}, nil
		}
	}
	posix := s
	if len(posix) > 3 && (strings.EqualFold(posix[:3], "utc") || strings.EqualFold(posix[:3], "gmt")) {
		posix = posix[3:]
	}
	if off, ok := posixOffset(posix); ok {
		return Zone{off: off}, nil
	}
	return Zone{}, pgerror.New(pgerror.InvalidParameterValue, "time zone %q not recognized", name)
}

// posixOffset reads ±h[h][:mm] as POSIX does, positive west of
// Greenwich, and returns it east of UTC in microseconds.
func posixOffset(s string) (int64, bool) {
	if len(s) < 2 || s[0] != '+' && s[0] != '-' {
		return 0, false
	}
	west := s[0] == '+'
	h, rest, ok := scanDigits(s[1:], 1, 2)
	if !ok || h > 24 {
		return 0, false
	}
	var m int64
	if rest != "" {
		if rest[0] != ':' {
			return 0, false
		}
		if m, rest, ok = scanDigits(rest[1:], 2, 2); !ok || rest != "" || m > 59 {
			return 0, false
		}
	}
	off := h*MicrosPerHour + m*MicrosPerMinute
	if west {
		off = -off
	}
	return off, true
}

// zoneAbbrevs are the fixed offsets, in minutes east of UTC, of common
// time zone abbreviations in PostgreSQL's Default set, which AT TIME ZONE
// takes before zone names (CET is always +01, as there). Ambiguous ones
// (IST, AST) are left out.
var zoneAbbrevs = map[string]int64{
	"UTC": 0, "UT": 0, "GMT": 0, "WET": 0, "BST": 60, "CET": 60, "CEST": 120, "MET": 60, "MEST": 120,
	"EET": 120, "EEST": 180, "MSK": 180, "JST": 540, "KST": 540, "HKT": 480, "AWST": 480,
	"ACST": 570, "ACDT": 630, "AEST": 600, "AEDT": 660, "NZST": 720, "NZDT": 780,
	"NST": -210, "NDT": -150, "EST": -300, "EDT": -240, "CST": -360, "CDT": -300, "MST": -420, "MDT": -360,
	"PST": -480, "PDT": -420, "AKST": -540, "AKDT": -480, "HST": -600,
}

// At is the zone's offset east of UTC, in microseconds, at the instant
// utc (Unix microseconds).
func (z Zone) At(utc int64) int64 {
	if z.loc == nil {
		return z.off
	}
	_, off := time.Unix(FloorDiv(utc, MicrosPerSecond), 0).In(z.loc).Zone()
	return int64(off) * MicrosPerSecond
}

// Wall is the zone's offset at the wall-clock time wall, read as
// PostgreSQL reads a local time (see zoneOffset).
func (z Zone) Wall(wall int64) int64 {
	if z.loc == nil {
		return z.off
	}
	return zoneOffset(z.loc, wall)
}
