package types

import (
	"strings"
	"testing"
	"time"
)

// TestTimestampNamedZone: a local time in a named zone takes the zone's
// offset at that time, not today's; where the clock ran twice it is the
// second time, where it never ran the offset from before the change.
// The expected values are PostgreSQL 15's (SET timezone = 'UTC').
func TestTimestampNamedZone(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2020-07-01 12:00 America/New_York", "2020-07-01 16:00:00"}, // summer time
		{"2020-01-15 12:00 America/New_York", "2020-01-15 17:00:00"},
		{"2020-03-08 12:00 America/New_York", "2020-03-08 16:00:00"}, // the day summer time starts
		{"2020-03-08 01:59:59 America/New_York", "2020-03-08 06:59:59"},
		{"2020-03-08 02:30 America/New_York", "2020-03-08 07:30:00"}, // never shown
		{"2020-11-01 01:30 America/New_York", "2020-11-01 06:30:00"}, // shown twice
		{"2020-11-01 00:59 America/New_York", "2020-11-01 04:59:00"},
		{"2020-03-29 02:30 Europe/Berlin", "2020-03-29 01:30:00"},
		{"2020-10-25 02:30 Europe/Berlin", "2020-10-25 01:30:00"},
		{"1900-01-01 00:00 Europe/Berlin", "1899-12-31 23:00:00"},
		{"2021-04-04 02:30 Australia/Sydney", "2021-04-03 16:30:00"}, // southern autumn: shown twice
		{"2021-10-03 02:30 Australia/Sydney", "2021-10-02 16:30:00"}, // southern spring: never shown
	} {
		us, err := ParseTimestamp(c.in, true)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := TimeFromMicros(us).Format(time.DateTime); got != c.want {
			t.Errorf("timestamptz %q = %s UTC, want %s", c.in, got, c.want)
		}
		// without time zone the zone is ignored
		wall := c.in[:strings.LastIndexByte(c.in, ' ')]
		got, err := ParseTimestamp(c.in, false)
		if want, _ := ParseTimestamp(wall, false); err != nil || got != want {
			t.Errorf("timestamp %q = %s (%v), want %s", c.in, TimeFromMicros(got), err, wall)
		}
	}
}
