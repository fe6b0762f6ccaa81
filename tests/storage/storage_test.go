package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

const inserts = 40 // INSERT statements of 5 rows each: one record batch each

func seed(t *testing.T) *rand.Rand {
	s := time.Now().UnixNano()
	if v := os.Getenv("FVSQL_DAMAGE_SEED"); v != "" {
		s, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("damage seed %d (FVSQL_DAMAGE_SEED=%d reproduces it)", s, s)
	return rand.New(rand.NewSource(s))
}

func exec1(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// written starts a server, creates stream ev (one partition) and inserts
// 5*inserts rows, id 0 upwards, five per INSERT.
func written(t *testing.T) *fvsqltest.Process {
	t.Helper()
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	exec1(t, conn, "CREATE STREAM ev (id BIGINT, v TEXT) WITH (partitions = 1)")
	for i := range inserts {
		var vals []string
		for j := range 5 {
			id := i*5 + j
			vals = append(vals, fmt.Sprintf("(%d, 'row %d')", id, id))
		}
		exec1(t, conn, "INSERT INTO ev VALUES "+strings.Join(vals, ", "))
	}
	return p
}

// ids are the ids of ev in offset order.
func ids(t *testing.T, conn *pgx.Conn) []int64 {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT id FROM ev")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lastSegment is the newest segment of the partition directory of the
// topic whose name contains name.
func lastSegment(t *testing.T, p *fvsqltest.Process, name string) string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(p.DataDir(), "kafka", "partitions", "*"+name+"*-0"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("partition directories of %s: %v %v", name, dirs, err)
	}
	segs, _ := filepath.Glob(filepath.Join(dirs[0], "*.dat"))
	slices.SortFunc(segs, func(a, b string) int {
		na, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(a), ".dat"), 10, 64)
		nb, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(b), ".dat"), 10, 64)
		return int(na - nb)
	})
	if len(segs) == 0 {
		t.Fatalf("no segment in %s", dirs[0])
	}
	return segs[len(segs)-1]
}

func batchStarts(raw []byte) []int {
	var out []int
	for pos := 0; pos+12 <= len(raw); pos += 12 + int(binary.BigEndian.Uint32(raw[pos+8:])) {
		out = append(out, pos)
	}
	return out
}

// refusesToStart restarts p and checks that it exits non-zero, with a
// message containing each of want, and no panic.
func refusesToStart(t *testing.T, p *fvsqltest.Process, want ...string) {
	t.Helper()
	before := len(p.LogLines(func(string) bool { return true }))
	p.Restart(t)
	err := p.WaitExit(t, fvsqltest.StartTimeout)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() <= 0 {
		t.Fatalf("the server on a damaged data directory ended with %v, want a non-zero exit status", err)
	}
	lines := p.LogLines(func(string) bool { return true })[before:]
	log := strings.Join(lines, "\n")
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Fatalf("the refusal does not say %q:\n%s", w, log)
		}
	}
	for _, bad := range []string{"panic", "goroutine "} {
		if strings.Contains(log, bad) {
			t.Fatalf("the refusal has a %q:\n%s", bad, log)
		}
	}
	t.Logf("refused (exit %d): %s", ee.ExitCode(), lines[len(lines)-1])
}

// Pebble's CURRENT deleted: Pebble alone takes the store for a new one
// and panics replaying the old WAL into it.
func TestMissingStateCurrentRefusesToStart(t *testing.T) {
	p := written(t)
	p.Stop(t)
	current := filepath.Join(p.DataDir(), "state", "CURRENT")
	if err := os.Remove(current); err != nil {
		t.Fatal(err)
	}
	refusesToStart(t, p, current, "is missing", "aside")
}

// A byte overwritten in the stream's segment or in the catalog's, after
// a clean stop or a kill: refused, naming the file.
func TestOverwrittenSegmentRefusesToStart(t *testing.T) {
	r := seed(t)
	for _, c := range []struct {
		topic string
		kill  bool
	}{{"ev", false}, {"ev", true}, {"_fvsql_catalog", true}} {
		t.Run(fmt.Sprintf("%s-kill=%v", c.topic, c.kill), func(t *testing.T) {
			p := written(t)
			if c.kill {
				p.Kill(t)
			} else {
				p.Stop(t)
			}
			seg := lastSegment(t, p, c.topic)
			raw, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			starts := batchStarts(raw)
			var at int
			for { // not the 4 bytes of a batch's leader epoch, which no checksum covers
				at = r.Intn(len(raw))
				i, _ := slices.BinarySearch(starts, at+1)
				if rel := at - starts[i-1]; rel < 12 || rel > 15 {
					break
				}
			}
			raw[at] ^= byte(1 + r.Intn(255))
			t.Logf("overwrote byte %d of %d of %s", at, len(raw), seg)
			if err := os.WriteFile(seg, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			refusesToStart(t, p, seg, "is damaged")
		})
	}
}

// The stream's segment cut inside its last batch after a kill (a torn
// write): repaired and said; what remains is the rows inserted first, in
// order; the server takes new rows after them and restarts cleanly. Cut
// further back, acknowledged batches are gone: refused.
func TestCutSegment(t *testing.T) {
	r := seed(t)
	t.Run("torn-tail", func(t *testing.T) {
		p := written(t)
		p.Kill(t)
		seg := lastSegment(t, p, "ev")
		raw, _ := os.ReadFile(seg)
		starts := batchStarts(raw)
		lo := starts[len(starts)-1]
		cut := lo + r.Intn(len(raw)-lo)
		lost := int(binary.BigEndian.Uint32(raw[lo+57:])) // the last batch's record count
		t.Logf("cutting %s at %d of %d", seg, cut, len(raw))
		if err := os.Truncate(seg, int64(cut)); err != nil {
			t.Fatal(err)
		}
		before := len(p.LogLines(func(string) bool { return true }))
		p.Restart(t)
		conn := p.Connect(t)
		warned := false
		for _, l := range p.LogLines(func(string) bool { return true })[before:] {
			warned = warned || (strings.Contains(l, "repaired a torn tail") && strings.Contains(l, seg) && strings.Contains(l, "WARN"))
		}
		if !warned {
			t.Fatalf("no WARN naming %s", seg)
		}
		got := ids(t, conn)
		if len(got) != 5*inserts-lost {
			t.Fatalf("%d rows after cutting the last batch (of %d rows), want %d", len(got), lost, 5*inserts-lost)
		}
		for i, id := range got {
			if id != int64(i) {
				t.Fatalf("row %d has id %d", i, id)
			}
		}
		exec1(t, conn, fmt.Sprintf("INSERT INTO ev VALUES (%d, 'again')", len(got)))
		conn.Close(context.Background())
		p.Stop(t)
		p.Restart(t)
		if got := ids(t, p.Connect(t)); len(got) != 5*inserts-lost+1 || got[len(got)-1] != int64(5*inserts-lost) {
			t.Fatalf("after the repair and a restart: %v", got)
		}
	})
	t.Run("acknowledged-batches", func(t *testing.T) {
		p := written(t)
		p.Kill(t)
		seg := lastSegment(t, p, "ev")
		raw, _ := os.ReadFile(seg)
		starts := batchStarts(raw)
		cut := r.Intn(starts[len(starts)-1])
		t.Logf("cutting %s at %d of %d", seg, cut, len(raw))
		if err := os.Truncate(seg, int64(cut)); err != nil {
			t.Fatal(err)
		}
		refusesToStart(t, p, seg, "is damaged")
	})
}
