package state_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/state"
)

// The store's own files damaged: Open refuses with state.ErrDamaged,
// naming the directory (and the file, where it knows which), and never
// panics; or, where Pebble's own recovery is safe (a torn WAL tail), it
// opens with what was synced.

func written(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := open(t, dir)
	for i := range 100 {
		if err := s.Set([]byte(fmt.Sprintf("k%03d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func files(t *testing.T, dir, prefix, suffix string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && strings.HasSuffix(e.Name(), suffix) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("no %s*%s in %s", prefix, suffix, dir)
	}
	return out
}

func refusedOpen(t *testing.T, dir, mention string) {
	t.Helper()
	s, err := state.Open(dir)
	if err == nil {
		s.Close()
		t.Fatalf("opened a damaged store (%s)", mention)
	}
	if !errors.Is(err, state.ErrDamaged) || !strings.Contains(err.Error(), mention) || !strings.Contains(err.Error(), "aside") {
		t.Fatalf("refused with %v, want state.ErrDamaged naming %s with a hint", err, mention)
	}
	t.Logf("refused: %v", err)
}

func TestMissingCurrentIsRefused(t *testing.T) {
	dir := written(t)
	if err := os.Remove(filepath.Join(dir, "CURRENT")); err != nil {
		t.Fatal(err)
	}
	refusedOpen(t, dir, filepath.Join(dir, "CURRENT"))
}

func TestDamagedManifestIsRefused(t *testing.T) {
	for _, how := range []string{"deleted", "truncated", "overwritten"} {
		t.Run(how, func(t *testing.T) {
			dir := written(t)
			ms := files(t, dir, "MANIFEST-", "")
			m := ms[len(ms)-1]
			raw, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			switch how {
			case "deleted":
				err = os.Remove(m)
			case "truncated":
				err = os.WriteFile(m, raw[:len(raw)/2], 0o644)
			case "overwritten":
				raw[len(raw)/3] ^= 0x5a
				err = os.WriteFile(m, raw, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			refusedOpen(t, dir, dir)
		})
	}
}
