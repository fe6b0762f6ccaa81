package file

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/backends"
)

// TestSeekBound checks the promise of the beacons: a seek starts at most
// one block's data plus the largest record before its target, whatever
// the log's length.
func TestSeekBound(t *testing.T) {
	dir := t.TempDir()
	const block = 1024
	st, err := Open(mustURL("file://"+dir+"/?block_size=1024"), backends.Env{FileRoot: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	p, _ := st.Producer(ctx)
	rng := rand.New(rand.NewPCG(3, 3))
	maxRec := int64(0)
	for i := 0; i < 5000; i += 50 {
		var batch []backends.Message
		for j := range 50 {
			size := rng.IntN(200)
			if rng.IntN(100) == 0 {
				size = 5000
			}
			maxRec = max(maxRec, int64(size+dataFixed+recHeader+8))
			batch = append(batch, backends.Message{Stream: "b.log", Payload: fmt.Appendf(nil, "%d%s", i+j, strings.Repeat("y", size))})
		}
		if err := p.Send(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "b.log")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	lay := layout{block}
	// Where each record of each sequence starts.
	r := newLogReader(f, lay)
	r.setLimit(fi.Size())
	starts := map[int64]int64{}
	for {
		at := r.pos
		body, stt, err := r.next()
		if err != nil || stt != recOK {
			break
		}
		if body[0] == kindData {
			d, _ := decodeData(body)
			starts[d.seq] = at
		}
	}
	if len(starts) != 5000 {
		t.Fatalf("%d data records", len(starts))
	}
	worst := int64(0)
	for seq := range int64(5000) {
		at, err := seekStart(f, lay, fi.Size(), false, seq, 0)
		if err != nil {
			t.Fatal(err)
		}
		if at > starts[seq] {
			t.Fatalf("Seek(%d) starts at %d, after the record (%d)", seq, at, starts[seq])
		}
		worst = max(worst, starts[seq]-at)
	}
	if bound := lay.data() + maxRec; worst > bound {
		t.Fatalf("a seek scans up to %d bytes, more than a block plus a record (%d)", worst, bound)
	}
	t.Logf("longest scan after a seek: %d bytes (block data %d, largest record %d)", worst, lay.data(), maxRec)
}
