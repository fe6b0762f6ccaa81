package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The corruption tests: a broker writes real files (several segments of
// a topic, committed offsets), stops, and the test damages one file the
// way a crash, a bad disk or a careless hand would, then starts it again.
// Either the start refuses with a *DamageError naming the file, or it
// repairs a torn tail, says so in the log, and what remains is
// consistent (offsets 0..n-1 with the values written, commits kept).

const (
	testTopic = "t"
	testGroup = "g"
	testRows  = 120
)

// logBuf is a slog handler's output the tests read.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, dir string) (*Broker, *logBuf, error) {
	t.Helper()
	lb := &logBuf{}
	b, err := Start(Config{DataDir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(lb, nil))})
	return b, lb, err
}

func client(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// populate writes testRows records, one batch each, into a topic of
// segments of about 2 KiB, and commits the group's offset after every
// tenth; it returns the data dir after a clean stop.
func populate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, _, err := start(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := client(t, b, kgo.DefaultProduceTopic(testTopic))
	adm := kadm.NewClient(cl)
	seg := "2048"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &seg}, testTopic); err != nil {
		t.Fatal(err)
	}
	for i := range testRows {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("row-%04d-%s", i, strings.Repeat("x", 40)))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if (i+1)%10 == 0 {
			commit(t, adm, int64(i+1))
		}
	}
	return dir
}

func commit(t *testing.T, adm *kadm.Client, off int64) {
	t.Helper()
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: testTopic, Partition: 0, At: off, LeaderEpoch: -1})
	resp, err := adm.CommitOffsets(context.Background(), testGroup, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// crashed makes dir look like a broker's that was killed: no clean.json.
func crashed(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, manifestName)); err != nil {
		t.Fatal(err)
	}
}

// consistent checks a started broker's topic: offsets 0..n-1 holding the
// rows written, n ≥ min; and the group's commit at least wantCommit.
func consistent(t *testing.T, b *Broker, min int, wantCommit int64) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := client(t, b)
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, testTopic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(testTopic, 0)
	n := int(end.Offset)
	if n < min {
		t.Fatalf("%d rows after the restart, want at least %d", n, min)
	}
	rd := client(t, b, kgo.ConsumeTopics(testTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < n; {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading back: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) || !strings.HasPrefix(string(r.Value), fmt.Sprintf("row-%04d-", got)) {
				t.Fatalf("offset %d holds %q at offset %d", got, r.Value, r.Offset)
			}
			got++
		})
	}
	committed, err := adm.FetchOffsets(ctx, testGroup)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := committed.Lookup(testTopic, 0)
	if c.At < wantCommit || c.At > int64(n) {
		t.Fatalf("committed offset %d, want %d..%d", c.At, wantCommit, n)
	}
	return n
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	pdir := filepath.Join(dir, "partitions", testTopic+"-0")
	ents, err := os.ReadDir(pdir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, e := range ents {
		if s, ok := strings.CutSuffix(e.Name(), ".dat"); ok {
			n, _ := strconv.ParseInt(s, 10, 64)
			bases = append(bases, n)
		}
	}
	slices.Sort(bases)
	out := make([]string, len(bases))
	for i, b := range bases {
		out[i] = filepath.Join(pdir, strconv.FormatInt(b, 10)+".dat")
	}
	if len(out) < 3 {
		t.Fatalf("%d segments, the tests want several", len(out))
	}
	return out
}

// batchStarts are the byte offsets of a segment's batches.
func batchStarts(t *testing.T, path string) []int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for pos := 0; pos+12 <= len(raw); pos += 12 + int(binary.BigEndian.Uint32(raw[pos+8:])) {
		out = append(out, pos)
	}
	return out
}

func refused(t *testing.T, dir, file string) {
	t.Helper()
	b, lb, err := start(t, dir)
	if err == nil {
		b.Close()
		t.Fatalf("the broker started on a damaged %s; log:\n%s", file, lb)
	}
	var de *DamageError
	if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
		t.Fatalf("refused with %v, want a *DamageError", err)
	}
	if de.File != file {
		t.Fatalf("the refusal names %s, want %s: %v", de.File, file, err)
	}
	t.Logf("refused: %v", err)
}

func seed(t *testing.T) *rand.Rand {
	s := time.Now().UnixNano()
	if v := os.Getenv("FVSQL_DAMAGE_SEED"); v != "" {
		s, _ = strconv.ParseInt(v, 10, 64)
	}
	t.Logf("damage seed %d (FVSQL_DAMAGE_SEED=%d reproduces it)", s, s)
	return rand.New(rand.NewSource(s))
}

func TestCleanRestartKeepsEverything(t *testing.T) {
	dir := populate(t)
	b, lb, err := start(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n := consistent(t, b, testRows, testRows); n != testRows {
		t.Fatalf("%d rows, want %d", n, testRows)
	}
	if strings.Contains(lb.String(), "level=WARN") {
		t.Fatalf("warnings on a clean restart:\n%s", lb)
	}
}

// A torn tail: the last segment cut inside its last batch, after a crash.
// Repaired, said in the log; the rest is all there, and the broker keeps
// writing after it.
func TestTornSegmentTailIsRepaired(t *testing.T) {
	r := seed(t)
	for i := range 3 {
		dir := populate(t)
		crashed(t, dir)
		segs := segments(t, dir)
		last := segs[len(segs)-1]
		starts := batchStarts(t, last)
		st, _ := os.Stat(last)
		lo := starts[len(starts)-1]
		cut := lo + r.Intn(int(st.Size())-lo) // [start of the last batch, size)
		if i == 0 {
			cut = lo // none of its bytes left, its .idx entry there
		}
		if err := os.Truncate(last, int64(cut)); err != nil {
			t.Fatal(err)
		}
		b, lb, err := start(t, dir)
		if err != nil {
			t.Fatalf("cut at %d of %d: %v", cut, st.Size(), err)
		}
		if !strings.Contains(lb.String(), "repaired a torn tail") || !strings.Contains(lb.String(), last) {
			t.Fatalf("no warning naming %s:\n%s", last, lb)
		}
		n := consistent(t, b, testRows-1, testRows-1)
		if n != testRows-1 {
			t.Fatalf("%d rows after cutting the last batch, want %d", n, testRows-1)
		}
		cl := client(t, b, kgo.DefaultProduceTopic(testTopic))
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(fmt.Sprintf("row-%04d-again", n))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		b.Close()
		b, _, err = start(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		consistent(t, b, n+1, testRows-10)
		b.Close()
	}
}

// A segment cut anywhere before its last batch loses acknowledged rows:
// refused, naming the file.
func TestTruncatedSegmentIsRefused(t *testing.T) {
	r := seed(t)
	for range 4 {
		dir := populate(t)
		crashed(t, dir)
		segs := segments(t, dir)
		i := r.Intn(len(segs))
		starts := batchStarts(t, segs[i])
		limit := starts[len(starts)-1]
		if i < len(segs)-1 { // any cut of an older segment
			st, _ := os.Stat(segs[i])
			limit = int(st.Size())
		}
		cut := r.Intn(limit)
		t.Logf("cutting %s at %d", segs[i], cut)
		if err := os.Truncate(segs[i], int64(cut)); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, segs[i])
	}
}

// One byte overwritten anywhere in a segment, but for the four bytes of
// each batch's partition leader epoch, which no checksum covers: refused.
func TestOverwrittenSegmentByteIsRefused(t *testing.T) {
	r := seed(t)
	for _, crash := range []bool{false, true} {
		for range 4 {
			dir := populate(t)
			if crash {
				crashed(t, dir)
			}
			segs := segments(t, dir)
			path := segs[r.Intn(len(segs))]
			raw, _ := os.ReadFile(path)
			starts := batchStarts(t, path)
			var at int
			for {
				at = r.Intn(len(raw))
				i, _ := slices.BinarySearch(starts, at+1)
				if rel := at - starts[i-1]; rel < 12 || rel > 15 {
					break
				}
			}
			raw[at] ^= byte(1 + r.Intn(255))
			t.Logf("crash %v: overwriting byte %d of %s", crash, at, path)
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			refused(t, dir, path)
		}
	}
}

// A segment deleted: after a clean stop clean.json misses it; after a
// crash the offsets of a topic that is not compacted have a gap.
func TestDeletedSegmentIsRefused(t *testing.T) {
	for _, crash := range []bool{false, true} {
		dir := populate(t)
		if crash {
			crashed(t, dir)
		}
		segs := segments(t, dir)
		path := segs[1]
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		want := path
		if crash {
			want = segs[2] // the first segment after the gap
		}
		refused(t, dir, want)
	}
}

// kfake's metadata gone: it would start an empty cluster over the data.
func TestDeletedMetadataIsRefused(t *testing.T) {
	for _, name := range []string{"meta.json", "topics.json"} {
		dir := populate(t)
		crashed(t, dir)
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		refused(t, dir, path)
	}
}

// A metadata file changed but still valid JSON, after a clean stop.
func TestChangedSnapshotIsRefused(t *testing.T) {
	dir := populate(t)
	path := filepath.Join(dir, "partitions", testTopic+"-0", "snapshot.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(raw, []byte(`"high_watermark":120`), []byte(`"high_watermark":110`), 1)
	if bytes.Equal(changed, raw) {
		t.Fatalf("no high watermark in %s", raw)
	}
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, dir, path)
}

// groups.log with a torn tail: repaired, and the commits made after the
// restart survive the next one (kfake alone appends them after the
// garbage, where its next load never reads them: rows emitted twice).
func TestTornGroupsLogIsRepaired(t *testing.T) {
	r := seed(t)
	for range 3 {
		dir := populate(t)
		crashed(t, dir)
		path := filepath.Join(dir, "groups.log")
		st, _ := os.Stat(path)
		raw, _ := os.ReadFile(path)
		lastEntry := 0
		for pos := 0; pos < len(raw); {
			lastEntry = pos
			pos += 8 + int(binary.LittleEndian.Uint32(raw[pos:]))
		}
		cut := lastEntry + 1 + r.Intn(int(st.Size())-lastEntry-1)
		if err := os.Truncate(path, int64(cut)); err != nil {
			t.Fatal(err)
		}
		b, lb, err := start(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(lb.String(), "repaired a torn tail") || !strings.Contains(lb.String(), path) {
			t.Fatalf("no warning naming %s:\n%s", path, lb)
		}
		adm := kadm.NewClient(client(t, b))
		commit(t, adm, testRows)
		b.Close()
		crashed(t, dir) // the next start reads the log, not clean.json's word
		b, _, err = start(t, dir)
		if err != nil {
			t.Fatal(err)
		}
		consistent(t, b, testRows, testRows)
		b.Close()
	}
}

// groups.log with a byte overwritten (after a crash), or cut before its
// last entry after a clean stop: refused (commits would be lost, and rows
// emitted twice). After a crash a cut is indistinguishable from a torn
// tail, which the test above covers: the log has no index to tell.
func TestDamagedGroupsLogIsRefused(t *testing.T) {
	r := seed(t)
	for _, cut := range []bool{false, true} {
		for range 3 {
			dir := populate(t)
			if !cut {
				crashed(t, dir)
			}
			path := filepath.Join(dir, "groups.log")
			raw, _ := os.ReadFile(path)
			lastEntry := 0
			for pos := 0; pos < len(raw); {
				lastEntry = pos
				pos += 8 + int(binary.LittleEndian.Uint32(raw[pos:]))
			}
			at := r.Intn(lastEntry)
			if cut {
				raw = raw[:at]
			} else {
				raw[at] ^= byte(1 + r.Intn(255))
			}
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("cut %v at byte %d", cut, at)
			refused(t, dir, path)
		}
	}
}
