package state_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/state"
)

func open(t *testing.T, dir string) *state.Store {
	t.Helper()
	s, err := state.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func scanStore(t *testing.T, s *state.Store, prefix string) string {
	t.Helper()
	var parts []string
	err := s.Scan([]byte(prefix), func(k, v []byte) error {
		parts = append(parts, fmt.Sprintf("%q=%q", k, v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts, " ")
}

type kv interface {
	Get(key []byte) ([]byte, bool, error)
	Scan(lo, hi []byte, fn func(key, value []byte) error) error
}

func scanTable(t *testing.T, tb kv, lo, hi []byte) string {
	t.Helper()
	var parts []string
	err := tb.Scan(lo, hi, func(k, v []byte) error {
		parts = append(parts, fmt.Sprintf("%q=%q", k, v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(parts, " ")
}

func TestStoreGetSetDeleteScan(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	if _, err := s.Get([]byte("missing")); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
	key, val := []byte("a/1"), []byte("one")
	if err := s.Set(key, val); err != nil {
		t.Fatal(err)
	}
	key[0], val[0] = 'X', 'X' // the arguments may be modified after Set
	got, err := s.Get([]byte("a/1"))
	if err != nil || string(got) != "one" {
		t.Fatalf("Get(a/1) = %q %v", got, err)
	}
	got[0] = 'Z' // Get's value is a copy
	if again, _ := s.Get([]byte("a/1")); string(again) != "one" {
		t.Errorf("modifying Get's result changed the store: %q", again)
	}
	for _, k := range []string{"a/2", "a/10", "a", "a0", "a/\xff", "a\xff", "b/1", "", "\xff\xff"} {
		if err := s.Set([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Set([]byte("a/empty"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get([]byte("a/empty")); err != nil || len(v) != 0 {
		t.Errorf("empty value: %q %v", v, err)
	}
	// prefix scans are bounded and ordered bytewise
	if got, want := scanStore(t, s, "a/"), `"a/1"="one" "a/10"="va/10" "a/2"="va/2" "a/empty"="" "a/\xff"="va/\xff"`; got != want {
		t.Errorf("Scan(a/):\n got %s\nwant %s", got, want)
	}
	if got, want := scanStore(t, s, "a\xff"), `"a\xff"="va\xff"`; got != want {
		t.Errorf("Scan(a\\xff) = %s, want %s", got, want)
	}
	if got, want := scanStore(t, s, "\xff"), `"\xff\xff"="v\xff\xff"`; got != want {
		t.Errorf("Scan(\\xff) = %s, want %s", got, want)
	}
	if got := scanStore(t, s, "c"); got != "" {
		t.Errorf("Scan(c) = %s", got)
	}
	all := scanStore(t, s, "")
	if !strings.HasPrefix(all, `""="v" "a"="va"`) || !strings.HasSuffix(all, `"\xff\xff"="v\xff\xff"`) {
		t.Errorf("Scan() = %s", all)
	}
	if err := s.Delete([]byte("a/1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete([]byte("never-there")); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if _, err := s.Get([]byte("a/1")); !errors.Is(err, state.ErrNotFound) {
		t.Errorf("deleted key: %v", err)
	}
	// the callback's error stops the scan and comes back
	stop := errors.New("stop")
	n := 0
	if err := s.Scan([]byte("a/"), func(_, _ []byte) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Scan stop: %v after %d", err, n)
	}
}

func TestEpochReadsOwnWritesAndCommits(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for _, k := range []string{"p/a", "p/b", "p/c", "q/a"} {
		if err := s.Set([]byte(k), []byte("old-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	ep := s.NewEpoch()
	tb := ep.Table([]byte("p/"))
	if v, ok, err := tb.Get([]byte("a")); err != nil || !ok || string(v) != "old-p/a" {
		t.Fatalf("table sees committed data: %q %v %v", v, ok, err)
	}
	if err := tb.Set([]byte("a"), []byte("new-a")); err != nil {
		t.Fatal(err)
	}
	if err := tb.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := tb.Set([]byte("d"), []byte("new-d")); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := tb.Get([]byte("a")); !ok || string(v) != "new-a" {
		t.Errorf("own write: %q %v", v, ok)
	}
	if _, ok, _ := tb.Get([]byte("b")); ok {
		t.Errorf("own delete still visible")
	}
	if _, ok, _ := tb.Get([]byte("zz")); ok {
		t.Errorf("missing key found")
	}
	if got, want := scanTable(t, tb, nil, nil), `"a"="new-a" "c"="old-p/c" "d"="new-d"`; got != want {
		t.Errorf("epoch scan:\n got %s\nwant %s", got, want)
	}
	if got, want := scanTable(t, tb, []byte("b"), []byte("d")), `"c"="old-p/c"`; got != want {
		t.Errorf("epoch scan [b, d): %s, want %s", got, want)
	}
	if ep.Size() == 0 {
		t.Errorf("Size() = 0 with changes")
	}
	// nothing is visible outside the epoch before Commit
	if v, err := s.Get([]byte("p/a")); err != nil || string(v) != "old-p/a" {
		t.Errorf("uncommitted write visible: %q %v", v, err)
	}
	if err := ep.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, want := scanStore(t, s, "p/"), `"p/a"="new-a" "p/c"="old-p/c" "p/d"="new-d"`; got != want {
		t.Errorf("after commit: %s, want %s", got, want)
	}
	// discard drops everything
	ep = s.NewEpoch()
	tb = ep.Table([]byte("p/"))
	_ = tb.Set([]byte("a"), []byte("discarded"))
	_ = tb.Delete([]byte("c"))
	ep.Discard()
	if got, want := scanStore(t, s, "p/"), `"p/a"="new-a" "p/c"="old-p/c" "p/d"="new-d"`; got != want {
		t.Errorf("after discard: %s, want %s", got, want)
	}
	// reopen: committed data survives (Commit does not fsync, Close flushes)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	if got, want := scanStore(t, s, ""), `"p/a"="new-a" "p/c"="old-p/c" "p/d"="new-d" "q/a"="old-q/a"`; got != want {
		t.Errorf("after reopen: %s, want %s", got, want)
	}
	ep = s.NewEpoch()
	if v, ok, _ := ep.Table([]byte("p/")).Get([]byte("d")); !ok || string(v) != "new-d" {
		t.Errorf("epoch after reopen: %q %v", v, ok)
	}
	ep.Discard()
}

// TestWriteEpoch: a write epoch's tables read only what is committed,
// and its writes (and changes) are applied like an indexed epoch's.
func TestWriteEpoch(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	for _, k := range []string{"p/a", "p/b"} {
		if err := s.Set([]byte(k), []byte("old-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	ep := s.NewWriteEpoch()
	tb := ep.Table([]byte("p/"))
	_ = tb.Set([]byte("a"), []byte("new-a"))
	_ = tb.Delete([]byte("b"))
	_ = tb.Set([]byte("c"), []byte("new-c"))
	if v, ok, err := tb.Get([]byte("a")); err != nil || !ok || string(v) != "old-p/a" {
		t.Errorf("write epoch Get: %q %v %v, want the committed value", v, ok, err)
	}
	if got, want := scanTable(t, tb, nil, nil), `"a"="old-p/a" "b"="old-p/b"`; got != want {
		t.Errorf("write epoch scan: %s, want %s (committed only)", got, want)
	}
	var changes []string
	_ = ep.Changes([]byte("p/"), func(k, v []byte, deleted bool) error {
		changes = append(changes, fmt.Sprintf("%s=%s/%v", k, v, deleted))
		return nil
	})
	if got, want := strings.Join(changes, " "), "p/a=new-a/false p/b=/true p/c=new-c/false"; got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
	if err := ep.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, want := scanStore(t, s, "p/"), `"p/a"="new-a" "p/c"="new-c"`; got != want {
		t.Errorf("after commit: %s, want %s", got, want)
	}
}

func TestEpochChanges(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	_ = s.Set([]byte("t/existing"), []byte("x"))
	ep := s.NewEpoch()
	tb := ep.Table([]byte("t/"))
	other := ep.Table([]byte("u/"))
	_ = tb.Set([]byte("set"), []byte("1"))
	_ = tb.Set([]byte("set"), []byte("2"))
	_ = tb.Set([]byte("set-del"), []byte("1"))
	_ = tb.Delete([]byte("set-del"))
	_ = tb.Delete([]byte("del-set"))
	_ = tb.Set([]byte("del-set"), []byte("back"))
	_ = tb.Delete([]byte("existing"))
	_ = tb.Set([]byte("empty"), nil)
	_ = other.Set([]byte("elsewhere"), []byte("y"))
	changes := func(prefix string) string {
		var parts []string
		err := ep.Changes([]byte(prefix), func(k, v []byte, deleted bool) error {
			if deleted {
				parts = append(parts, fmt.Sprintf("%s:deleted", k))
			} else {
				parts = append(parts, fmt.Sprintf("%s=%s", k, v))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(parts)
		return strings.Join(parts, " ")
	}
	if got, want := changes("t/"), "t/del-set=back t/empty= t/existing:deleted t/set-del:deleted t/set=2"; got != want {
		t.Errorf("Changes(t/):\n got %s\nwant %s", got, want)
	}
	if got, want := changes("u/"), "u/elsewhere=y"; got != want {
		t.Errorf("Changes(u/) = %s", got)
	}
	if got := changes(""); strings.Count(got, " ")+1 != 6 {
		t.Errorf("Changes() = %s", got)
	}
	stop := errors.New("stop")
	if err := ep.Changes(nil, func(_, _ []byte, _ bool) error { return stop }); err != stop {
		t.Errorf("Changes error: %v", err)
	}
	if err := ep.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, want := scanStore(t, s, "t/"), `"t/del-set"="back" "t/empty"="" "t/set"="2"`; got != want {
		t.Errorf("committed: %s, want %s", got, want)
	}
}

func TestTablePrefixIsolationAndDeletePrefix(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	ep := s.NewEpoch()
	a := ep.Table([]byte("pipe/a/"))
	b := ep.Table([]byte("pipe/b/"))
	ff := ep.Table([]byte("pipe/\xff"))
	prefix := []byte("pipe/c/")
	c := ep.Table(prefix)
	prefix[5] = 'X' // Table copies its prefix
	for i, tb := range []*state.Table{a, b, ff, c} {
		for _, k := range []string{"", "k1", "k2", "\xff"} {
			if err := tb.Set([]byte(k), []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := `""="0" "k1"="0" "k2"="0" "\xff"="0"`
	if got := scanTable(t, a, nil, nil); got != want {
		t.Errorf("table a: %s, want %s", got, want)
	}
	if got := scanTable(t, ff, nil, nil); got != strings.ReplaceAll(want, "0", "2") {
		t.Errorf("table \\xff: %s", got)
	}
	if got, want := scanTable(t, b, []byte("k"), []byte("k2")), `"k1"="1"`; got != want {
		t.Errorf("table b [k, k2): %s, want %s", got, want)
	}
	if got, want := scanTable(t, c, []byte("k2"), nil), `"k2"="3" "\xff"="3"`; got != want {
		t.Errorf("table c [k2, ∞): %s, want %s", got, want)
	}
	if v, ok, _ := b.Get([]byte("k1")); !ok || string(v) != "1" {
		t.Errorf("b.Get(k1) = %q", v)
	}
	// keys seen in a Scan callback are relative to the table's prefix
	_ = a.Scan(nil, nil, func(k, _ []byte) error {
		if bytes.HasPrefix(k, []byte("pipe/")) {
			t.Errorf("Scan key %q carries the prefix", k)
		}
		return nil
	})
	if err := ep.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePrefix([]byte("pipe/b/")); err != nil {
		t.Fatal(err)
	}
	if got := scanStore(t, s, "pipe/b/"); got != "" {
		t.Errorf("after DeletePrefix: %s", got)
	}
	for _, p := range []string{"pipe/a/", "pipe/c/", "pipe/\xff"} {
		if got := scanStore(t, s, p); strings.Count(got, "=") != 4 {
			t.Errorf("DeletePrefix(pipe/b/) touched %s: %s", p, got)
		}
	}
	if err := s.DeletePrefix(nil); err == nil {
		t.Errorf("DeletePrefix(nil) succeeded")
	}
	// an epoch opened after DeletePrefix does not see the deleted keys
	ep = s.NewEpoch()
	if _, ok, _ := ep.Table([]byte("pipe/b/")).Get([]byte("k1")); ok {
		t.Errorf("deleted key visible in a new epoch")
	}
	ep.Discard()
}

// A random model check: an epoch's Table behaves like a map overlaid on
// the committed data, through random Set/Delete/Get/Scan, commits and
// discards.
func TestEpochModel(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	r := rand.New(rand.NewPCG(3, 4))
	committed := map[string]string{}
	keys := []string{"", "a", "ab", "b", "b\x00", "b\xff", "c", "\xff", "\xff\xff"}
	for round := 0; round < 200; round++ {
		ep := s.NewEpoch()
		tb := ep.Table([]byte("m/"))
		live := map[string]string{}
		for k, v := range committed {
			live[k] = v
		}
		for op := 0; op < 20; op++ {
			k := keys[r.IntN(len(keys))]
			switch r.IntN(4) {
			case 0, 1:
				v := fmt.Sprint(r.IntN(100))
				_ = tb.Set([]byte(k), []byte(v))
				live[k] = v
			case 2:
				_ = tb.Delete([]byte(k))
				delete(live, k)
			case 3:
				v, ok, err := tb.Get([]byte(k))
				if want, wok := live[k]; err != nil || ok != wok || (ok && string(v) != want) {
					t.Fatalf("round %d: Get(%q) = %q %v, want %q %v", round, k, v, ok, want, wok)
				}
			}
		}
		lo, hi := keys[r.IntN(len(keys))], keys[r.IntN(len(keys))]
		var hib []byte
		if r.IntN(3) != 0 {
			hib = []byte(hi)
		}
		var inRange []string
		for k := range live {
			if k >= lo && (hib == nil || k < hi) {
				inRange = append(inRange, k)
			}
		}
		sort.Strings(inRange) // bytewise
		var want []string
		for _, k := range inRange {
			want = append(want, fmt.Sprintf("%q=%q", k, live[k]))
		}
		if got := scanTable(t, tb, []byte(lo), hib); got != strings.Join(want, " ") {
			t.Fatalf("round %d: Scan(%q, %q):\n got %s\nwant %s", round, lo, hib, got, strings.Join(want, " "))
		}
		if r.IntN(3) == 0 {
			ep.Discard()
			continue
		}
		if err := ep.Commit(); err != nil {
			t.Fatal(err)
		}
		committed = live
	}
}

func TestStoreSizeCountsOnlyItsPrefix(t *testing.T) {
	s := open(t, t.TempDir())
	want := int64(0)
	for i := 0; i < 100; i++ {
		k, v := []byte(fmt.Sprintf("p/a/%03d", i)), bytes.Repeat([]byte{'x'}, i)
		if err := s.Set(k, v); err != nil {
			t.Fatal(err)
		}
		want += int64(len(k) + len(v))
		if err := s.Set([]byte(fmt.Sprintf("p/b/%03d", i)), v); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Size([]byte("p/a/")); err != nil || got != want {
		t.Fatalf("Size(p/a/) = %d, %v; want %d", got, err, want)
	}
	if err := s.DeletePrefix([]byte("p/a/")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Size([]byte("p/a/")); err != nil || got != 0 {
		t.Fatalf("Size after DeletePrefix = %d, %v; want 0", got, err)
	}
}

// TestEpochChangesModel: random sets and deletes over a few keys in two
// prefixes; Changes must report each key of the prefix once, in the order
// first changed, with its last value. Run with the real hash and with one
// under which every key collides.
func TestEpochChangesModel(t *testing.T) {
	for _, collide := range []bool{false, true} {
		t.Run(fmt.Sprintf("collide=%v", collide), func(t *testing.T) {
			if collide {
				defer state.SetChangesHash(func([]byte) uint64 { return 7 })()
			}
			s := open(t, t.TempDir())
			defer s.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			ep := s.NewEpoch()
			tabs := map[string]*state.Table{"a/": ep.Table([]byte("a/")), "b/": ep.Table([]byte("b/"))}
			type final struct {
				v       string
				deleted bool
			}
			model := map[string]final{}
			var order []string
			for i := 0; i < 3000; i++ {
				pfx := []string{"a/", "b/"}[rng.IntN(2)]
				k := fmt.Sprintf("k%03d", rng.IntN(150))
				full := pfx + k
				if _, ok := model[full]; !ok && pfx == "a/" {
					order = append(order, full)
				}
				if rng.IntN(3) == 0 {
					_ = tabs[pfx].Delete([]byte(k))
					model[full] = final{deleted: true}
				} else {
					v := fmt.Sprintf("v%d", i)
					_ = tabs[pfx].Set([]byte(k), []byte(v))
					model[full] = final{v: v}
				}
			}
			var got []string
			err := ep.Changes([]byte("a/"), func(k, v []byte, deleted bool) error {
				got = append(got, string(k))
				if m := model[string(k)]; m.deleted != deleted || (!deleted && m.v != string(v)) {
					t.Fatalf("%s: got %q deleted=%v, want %+v", k, v, deleted, m)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != strings.Join(order, " ") {
				t.Fatalf("order:\n got %v\nwant %v", got, order)
			}
			ep.Discard()
		})
	}
}
