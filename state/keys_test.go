package state

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// TestKeyspaceBytes pins the keyspace: data directories written by
// earlier builds must read back, so these bytes change only with a
// migration.
func TestKeyspaceBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		key  []byte
		want string
	}{
		{"catalog", CatalogKey("t"), "636174616c6f672f72656c2f74"},
		{"pipeline", PipelinePrefix("p"), "0673000106700001"},
		{"partition", PartitionPrefix("p", "s1", "top", 3), "0673000106700001067331000106746f700001038000000000000003"},
		{"view rows", ViewRowsPrefix("v1"), "06760001067631000172"},
		{"view pos", ViewPosKey("v1", 2), "0676706f7300010676310001038000000000000002"},
	} {
		if got := hex.EncodeToString(c.key); got != c.want {
			t.Errorf("%s key = %s, want %s", c.name, got, c.want)
		}
	}
}

// TestKeyspaceDisjoint: no owner's keys fall under another's prefix, nor
// one name's under a longer name's.
func TestKeyspaceDisjoint(t *testing.T) {
	keys := map[string][]byte{
		"catalog":   CatalogKey("a"),
		"state a":   PartitionPrefix("a", "s", "t", 0),
		"state ab":  PartitionPrefix("ab", "s", "t", 0),
		"view a":    ViewRowsPrefix("a"),
		"view ab":   ViewRowsPrefix("ab"),
		"vpos a":    ViewPosKey("a", 0),
		"vpos ab":   ViewPosKey("ab", 0),
		"stage a s": StagePrefix("a", "s"),
	}
	prefixes := map[string][]byte{
		"catalog":  CatalogPrefix(),
		"pipeline": PipelinePrefix("a"),
		"view a":   ViewPrefix("a"),
		"vpos a":   ViewPosPrefix("a"),
	}
	owns := map[string][]string{
		"catalog":  {"catalog"},
		"pipeline": {"state a", "stage a s"},
		"view a":   {"view a"},
		"vpos a":   {"vpos a"},
	}
	for pn, p := range prefixes {
		for kn, k := range keys {
			want := false
			for _, o := range owns[pn] {
				want = want || o == kn
			}
			if got := bytes.HasPrefix(k, p); got != want {
				t.Errorf("key %q under prefix %q: %v, want %v", kn, pn, got, want)
			}
		}
	}
}
