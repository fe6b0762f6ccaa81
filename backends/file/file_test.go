package file_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/file"
	"github.com/fvsql/fvsql/pgerror"
)

func openURI(t testing.TB, uri string, env backends.Env) backends.Streamer {
	t.Helper()
	st, err := backends.Open(context.Background(), uri, env)
	if err != nil {
		t.Fatalf("open %s: %v", uri, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func code(err error) string {
	var pe *pgerror.Error
	if errors.As(err, &pe) {
		return pe.Code.String()
	}
	return ""
}

func scan(t testing.TB, st backends.Streamer, stream string) []backends.Message {
	t.Helper()
	var out []backends.Message
	err := st.Scan(context.Background(), stream, func(_ int32, batch []backends.Message) error {
		for _, m := range batch {
			m.Key, m.Payload = bytes.Clone(m.Key), bytes.Clone(m.Payload)
			out = append(out, m)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Scan %s: %v", stream, err)
	}
	return out
}

// readAll reads to the end with a non-following consumer.
func readAll(t testing.TB, st backends.Streamer, stream string) []backends.Message {
	t.Helper()
	ctx := context.Background()
	c, err := st.Consumer(ctx, stream, backends.ConsumerOptions{})
	if err != nil {
		t.Fatalf("Consumer %s: %v", stream, err)
	}
	defer c.Close()
	var out []backends.Message
	for {
		msgs, err := c.Read(ctx, 1000)
		if errors.Is(err, backends.ErrEndOfStream) {
			return out
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, msgs...)
	}
}

type batchInfo struct {
	end       int64 // file size after the batch
	msgs      []backends.Message
	positions map[string]int64 // the complete map after the batch
}

// writeBatches writes random batches (some with positions) and returns
// what each batch left.
func writeBatches(t *testing.T, st backends.Streamer, path string, nBatches int, rng *rand.Rand) []batchInfo {
	t.Helper()
	ctx := context.Background()
	p, err := st.Producer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pp := p.(backends.PositionedProducer)
	var out []batchInfo
	pos := map[string]int64{}
	seq := 0
	for b := range nBatches {
		n := 1 + rng.IntN(6)
		var msgs []backends.Message
		for range n {
			m := backends.Message{
				Stream:    path,
				Timestamp: time.UnixMicro(1_700_000_000_000_000 + int64(seq)*1000),
				Payload:   fmt.Appendf(nil, "m%05d:%s", seq, strings.Repeat("p", rng.IntN(700))),
			}
			if rng.IntN(2) == 0 {
				m.Key = fmt.Appendf(nil, "k%d", seq%5)
			}
			msgs = append(msgs, m)
			seq++
		}
		if b%3 == 1 {
			np := map[string]int64{fmt.Sprintf("src/%d", b%2): int64(seq)}
			if err := pp.SendAt(ctx, msgs, np); err != nil {
				t.Fatal(err)
			}
			maps.Copy(pos, np)
		} else if err := p.Send(ctx, msgs); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, batchInfo{end: st.Size(), msgs: msgs, positions: maps.Clone(pos)})
	}
	return out
}

// fastTempDir is a temporary directory in memory when the machine has
// one (/dev/shm): the torn-tail test opens thousands of files.
func fastTempDir(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "fvsql-file-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func checkPrefix(t *testing.T, what string, got []backends.Message, batches []batchInfo, nb int) {
	t.Helper()
	var want []backends.Message
	for _, b := range batches[:nb] {
		want = append(want, b.msgs...)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d messages, want %d (%d intact batches)", what, len(got), len(want), nb)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Sequence != int64(i) || !bytes.Equal(g.Payload, w.Payload) || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) || !g.Timestamp.Equal(w.Timestamp) {
			t.Fatalf("%s: message %d = seq %d key %q payload %.20q; want seq %d key %q payload %.20q", what, i, g.Sequence, g.Key, g.Payload, i, w.Key, w.Payload)
		}
	}
}

// TestTornTail cuts, zeroes and corrupts the end of a log at many byte
// positions and checks that readers see exactly the intact batches, and
// that a writer truncates the rest and appends after them.
func TestTornTail(t *testing.T) {
	for _, block := range []int{256, 4096, 65536} {
		t.Run(fmt.Sprint("block", block), func(t *testing.T) {
			dir := fastTempDir(t)
			rng := rand.New(rand.NewPCG(1, uint64(block)))
			src := filepath.Join(dir, "src.log")
			uri := fmt.Sprintf("file://%s/?block_size=%d", dir, block)
			st := openURI(t, uri, backends.Env{FileRoot: dir})
			batches := writeBatches(t, st, src, 30, rng)
			st.Close()
			full, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			intact := func(size int64) int { // batches wholly within size bytes
				n := 0
				for n < len(batches) && batches[n].end <= size {
					n++
				}
				return n
			}
			// Truncations at every byte of the last two batches (a crash
			// tears only the batch being written; two cover the batch a
			// recovery starts from), zeroes and flips at every few bytes
			// there, and strides over the rest.
			tailFrom := batches[len(batches)-3].end
			stride := map[string][2]int64{"truncate": {1, 23}, "zero": {5, 47}, "flip": {3, 0}}
			if testing.Short() {
				stride = map[string][2]int64{"truncate": {3, 97}, "zero": {17, 0}, "flip": {11, 0}}
			}
			var i int
			for _, mode := range []string{"truncate", "zero", "flip"} {
				for p := int64(0); p < int64(len(full)); p++ {
					if sd := stride[mode]; p >= tailFrom && p%sd[0] != 0 || p < tailFrom && (sd[1] == 0 || p%sd[1] != 0) {
						continue
					}
					if mode == "zero" && p < 48 {
						continue // zeros over the header: not a crash, a wiped file
					}
					i++
					data := slices.Clone(full)
					nb := intact(p)
					switch mode {
					case "truncate":
						data = data[:p]
					case "zero":
						clear(data[p:])
						// A batch ending in zero bytes (a commit's count) may
						// survive: it is unchanged.
						for nb < len(batches) && !bytes.ContainsFunc(full[p:batches[nb].end], func(r rune) bool { return r != 0 }) {
							nb++
						}
					case "flip":
						data[p] ^= 0x5a
						// A flipped byte damages the batch it is in: that batch
						// and the ones after it are lost.
						nb = 0
						for nb < len(batches) && batches[nb].end <= p {
							nb++
						}
					}
					name := fmt.Sprintf("t%d.log", i)
					path := filepath.Join(dir, name)
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("%s at %d of %d", mode, p, len(full))
					st := openURI(t, uri, backends.Env{FileRoot: dir})
					// A reader before any writer: the intact prefix (a flipped
					// byte in a beacon is invisible to sequential reads).
					got := readAll(t, st, name)
					inBeacon := p >= int64(block) && p%int64(block) < 48
					if !(mode == "flip" && inBeacon) {
						checkPrefix(t, what+": reader", got, batches, nb)
					}
					// The writer truncates the rest and appends after it.
					pr, _ := st.Producer(context.Background())
					pos, err := pr.(backends.PositionedProducer).Positions(context.Background(), name)
					if err != nil {
						t.Fatalf("%s: Positions: %v", what, err)
					}
					wantPos := map[string]int64{}
					if nb > 0 {
						wantPos = batches[nb-1].positions
					}
					if !maps.Equal(pos, wantPos) {
						t.Fatalf("%s: positions %v, want %v", what, pos, wantPos)
					}
					extra := backends.Message{Stream: name, Payload: []byte("after recovery"), Timestamp: time.UnixMicro(42)}
					if err := pr.Send(context.Background(), []backends.Message{extra}); err != nil {
						t.Fatalf("%s: Send after recovery: %v", what, err)
					}
					got = scan(t, st, name)
					if len(got) == 0 || string(got[len(got)-1].Payload) != "after recovery" {
						t.Fatalf("%s: the appended message is missing", what)
					}
					checkPrefix(t, what+": after recovery", got[:len(got)-1], batches, nb)
					if last := got[len(got)-1]; last.Sequence != int64(len(got)-1) {
						t.Fatalf("%s: appended message has sequence %d, want %d", what, last.Sequence, len(got)-1)
					}
					st.Close()
					os.Remove(path)
				}
			}
			t.Logf("%d damaged copies of a %d-byte log checked", i, len(full))
		})
	}
}

// TestSeekExhaustive seeks to every sequence and many times in a log of
// varied record sizes (records larger than a block leave blocks where no
// record starts) and timestamps that do not increase.
func TestSeekExhaustive(t *testing.T) {
	dir := t.TempDir()
	st := openURI(t, "file://"+dir+"/?block_size=512", backends.Env{FileRoot: dir})
	ctx := context.Background()
	p, _ := st.Producer(ctx)
	rng := rand.New(rand.NewPCG(7, 7))
	const n = 3000
	var all []backends.Message
	for i := 0; i < n; {
		var batch []backends.Message
		for j := 0; j < 1+rng.IntN(40) && i < n; j++ {
			size := rng.IntN(100)
			if rng.IntN(50) == 0 {
				size = 2000 + rng.IntN(3000) // spans several blocks
			}
			ts := time.UnixMicro(1_000_000_000 + int64(i)*100 + int64(rng.IntN(500)) - 250) // jittered: not monotonic
			m := backends.Message{Stream: "s.log", Timestamp: ts, Payload: fmt.Appendf(nil, "%06d%s", i, strings.Repeat(".", size))}
			batch = append(batch, m)
			all = append(all, m)
			i++
		}
		if err := p.Send(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	c, err := st.Consumer(ctx, "s.log", backends.ConsumerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sk := c.(backends.Seeker)
	first := func() int {
		msgs, err := c.Read(ctx, 1)
		if errors.Is(err, backends.ErrEndOfStream) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		var i int
		fmt.Sscanf(string(msgs[0].Payload[:6]), "%d", &i)
		if msgs[0].Sequence != int64(i) {
			t.Fatalf("message %d has sequence %d", i, msgs[0].Sequence)
		}
		return i
	}
	for seq := range int64(n + 2) {
		if err := sk.Seek(ctx, seq); err != nil {
			t.Fatal(err)
		}
		if got := first(); got != int(min(seq, n)) {
			t.Fatalf("Seek(%d): first message %d", seq, got)
		}
	}
	for range 2000 {
		ts := time.UnixMicro(1_000_000_000 + rng.Int64N(n*100+1000) - 500)
		want := n
		for i, m := range all {
			if !m.Timestamp.Before(ts) {
				want = i
				break
			}
		}
		if err := sk.SeekTime(ctx, ts); err != nil {
			t.Fatal(err)
		}
		if got := first(); got != want {
			t.Fatalf("SeekTime(%d): first message %d, want %d", ts.UnixMicro(), got, want)
		}
	}
}

func TestTextFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	path := filepath.Join(dir, "rows.jsonl")
	content := "\xef\xbb\xbf{\"a\":1}\r\n\n{\"a\":2}\n   \n{\"a\":3}\r\n{\"a\":4}" // BOM, CRLF, blank lines, no final newline
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	want := []string{`{"a":1}`, `{"a":2}`, `   `, `{"a":3}`, `{"a":4}`}
	wantSeq := []int64{1, 3, 4, 5, 6}
	check := func(what string, got []backends.Message, want []string, seqs []int64) {
		t.Helper()
		var ps []string
		var ss []int64
		for _, m := range got {
			ps = append(ps, string(m.Payload))
			ss = append(ss, m.Sequence)
		}
		if !slices.Equal(ps, want) || !slices.Equal(ss, seqs) {
			t.Fatalf("%s: payloads %q sequences %v; want %q %v", what, ps, ss, want, seqs)
		}
	}
	check("Scan", scan(t, st, "rows.jsonl"), want, wantSeq)
	check("Consumer", readAll(t, st, "rows.jsonl"), want, wantSeq)

	// A following consumer does not deliver the unterminated last line
	// until its newline arrives, then follows appended lines.
	c, err := st.Consumer(ctx, "rows.jsonl", backends.ConsumerOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Read(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	check("Follow", got, want[:4], wantSeq[:4])
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		f.WriteString("\n{\"a\":5}\n{\"a\":6")
	}()
	var more []backends.Message
	for len(more) < 2 {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msgs, err := c.Read(tctx, 100)
		cancel()
		if err != nil {
			t.Fatalf("Follow: %v", err)
		}
		more = append(more, msgs...)
	}
	check("Follow after append", more, []string{`{"a":4}`, `{"a":5}`}, []int64{6, 7})
	f.Close()

	// Send appends lines (to a file whose last line had no newline: one is added).
	p, _ := st.Producer(ctx)
	if err := p.Send(ctx, []backends.Message{{Stream: "rows.jsonl", Payload: []byte(`{"a":7}`)}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(b), "{\"a\":6\n{\"a\":7}\n") {
		t.Fatalf("after Send: %q", b)
	}
	err = p.Send(ctx, []backends.Message{{Stream: "rows.jsonl", Payload: []byte("a\nb")}})
	if code(err) != pgerror.InvalidParameterValue.String() {
		t.Fatalf("payload with a newline: %v (code %q), want 22023", err, code(err))
	}
	if err := p.(backends.PositionedProducer).SendAt(ctx, []backends.Message{{Stream: "rows.jsonl", Payload: []byte("x")}}, map[string]int64{"a": 1}); code(err) != pgerror.FeatureNotSupported.String() {
		t.Fatalf("SendAt to a text file: %v, want 0A000", err)
	}

	// Groups on text files resume at the line after the last acknowledged one.
	g1, err := st.Consumer(ctx, "rows.jsonl", backends.ConsumerOptions{Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := g1.Read(ctx, 3)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("group read: %d, %v", len(msgs), err)
	}
	if err := g1.Ack(ctx, msgs[:2]); err != nil {
		t.Fatal(err)
	}
	g1.Close()
	if _, err := os.Stat(path + ".g.pos"); err != nil {
		t.Fatalf("group position file: %v", err)
	}
	g2, err := st.Consumer(ctx, "rows.jsonl", backends.ConsumerOptions{Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	msgs, err = g2.Read(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	check("group resume", msgs, []string{`   `, `{"a":3}`}, []int64{4, 5})
	// Seek by line number scans; SeekTime is not supported.
	if err := g2.(backends.Seeker).Seek(ctx, 7); err != nil {
		t.Fatal(err)
	}
	msgs, _ = g2.Read(ctx, 1)
	check("Seek(7)", msgs, []string{`{"a":5}`}, []int64{7})
	if err := g2.(backends.Seeker).SeekTime(ctx, time.Now()); code(err) != pgerror.FeatureNotSupported.String() {
		t.Fatalf("SeekTime on a text file: %v", err)
	}

	// format=lines makes new files text: a JSON-lines sink.
	sink := openURI(t, "file://"+dir+"/?format=lines", backends.Env{FileRoot: dir})
	if err := sink.CreateStream(ctx, backends.StreamSpec{Name: "out.jsonl"}); err != nil {
		t.Fatal(err)
	}
	sp, _ := sink.Producer(ctx)
	if err := sp.Send(ctx, []backends.Message{{Stream: "out.jsonl", Payload: []byte(`{"x":1}`)}, {Stream: "out.jsonl", Payload: []byte(`{"x":2}`)}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl")); string(b) != "{\"x\":1}\n{\"x\":2}\n" {
		t.Fatalf("lines sink wrote %q", b)
	}
	check("CSV", scanText(t, st, dir, "t.csv", "a,b\n1,2\n3,4\n"), []string{"a,b", "1,2", "3,4"}, []int64{1, 2, 3})
	check("empty file", scanText(t, st, dir, "empty.csv", ""), nil, nil)
}

func scanText(t *testing.T, st backends.Streamer, dir, name, content string) []backends.Message {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return scan(t, st, name)
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	env := backends.Env{FileRoot: dir}
	st := openURI(t, "file://"+dir+"/", env)
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		err  error
		code string
	}{
		{"CreateStream of a directory", st.CreateStream(ctx, backends.StreamSpec{Name: "adir"}), pgerror.InvalidParameterValue.String()},
		{"CreateStream in a missing directory", st.CreateStream(ctx, backends.StreamSpec{Name: "missing/x.log"}), pgerror.IOError.String()},
		{"CreateStream outside the root", st.CreateStream(ctx, backends.StreamSpec{Name: "../x.log"}), pgerror.InsufficientPrivilege.String()},
		{"CreateStream outside the directory", openURI(t, "file://"+dir+"/adir/", env).CreateStream(ctx, backends.StreamSpec{Name: "../x.log"}), pgerror.InvalidParameterValue.String()},
		{"CreateStream of an absolute path outside the root", st.CreateStream(ctx, backends.StreamSpec{Name: "/proc/fvsql-test.log"}), pgerror.InsufficientPrivilege.String()},
		{"DropStream of a directory", st.DropStream(ctx, "adir"), pgerror.InvalidParameterValue.String()},
		{"Scan of a missing file", st.Scan(ctx, "nope.log", func(int32, []backends.Message) error { return nil }), pgerror.UndefinedTable.String()},
		{"Consumer of a directory", consumerErr(st, "adir"), pgerror.InvalidParameterValue.String()},
		{"Consumer of a missing file", consumerErr(st, "nope.log"), pgerror.UndefinedTable.String()},
		{"Send into a missing directory", sendErr(st, "missing/x.log"), pgerror.IOError.String()},
		{"URI with a host", openErr("file://example.com/x.log", env), pgerror.InvalidParameterValue.String()},
		{"URI with an unknown option", openErr("file://"+dir+"/?fsync=no", env), pgerror.InvalidParameterValue.String()},
		{"URI with a bad format", openErr("file://"+dir+"/?format=csv", env), pgerror.InvalidParameterValue.String()},
		{"URI without a root or data directory", openErr("file://"+dir+"/", backends.Env{}), pgerror.InvalidParameterValue.String()},
		{"relative URI without a root or data directory", openErr("file:x.log", backends.Env{}), pgerror.InvalidParameterValue.String()},
	} {
		if c.err == nil || code(c.err) != c.code {
			t.Errorf("%s: %v (code %q), want code %s", c.what, c.err, code(c.err), c.code)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		os.Mkdir(ro, 0o555)
		if err := st.CreateStream(ctx, backends.StreamSpec{Name: "ro/x.log"}); code(err) != pgerror.IOError.String() {
			t.Errorf("CreateStream in a read-only directory: %v", err)
		}
	}
	// A file that is not a log but starts like one is damaged, not text.
	bad := filepath.Join(dir, "bad.log")
	os.WriteFile(bad, append([]byte("FVSQLLOG"), make([]byte, 100)...), 0o644)
	if err := st.Scan(ctx, "bad.log", func(int32, []backends.Message) error { return nil }); code(err) != pgerror.IOError.String() {
		t.Errorf("Scan of a damaged header: %v, want 58030", err)
	}
}

func consumerErr(st backends.Streamer, name string) error {
	c, err := st.Consumer(context.Background(), name, backends.ConsumerOptions{})
	if err == nil {
		c.Close()
	}
	return err
}

func sendErr(st backends.Streamer, name string) error {
	p, _ := st.Producer(context.Background())
	return p.Send(context.Background(), []backends.Message{{Stream: name, Payload: []byte("x")}})
}

func openErr(uri string, env backends.Env) error {
	st, err := backends.Open(context.Background(), uri, env)
	if err == nil {
		st.Close()
	}
	return err
}

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	data := t.TempDir()
	env := backends.Env{FileRoot: dir, DataDir: data}
	cases := []struct {
		env               backends.Env
		uri, stream, want string
	}{
		{env, "file://" + dir + "/", "a.log", filepath.Join(dir, "a.log")},
		{env, "file://" + dir, "a.log", filepath.Join(dir, "a.log")}, // an existing directory without the slash
		{env, "file://" + dir + "/", "sub/b.log", filepath.Join(dir, "sub/b.log")},
		{env, "file://" + dir + "/pinned.log", "clicks", filepath.Join(dir, "pinned.log")},
		{env, "file://" + dir + "/pinned.log", dir + "/abs/x.log", filepath.Join(dir, "abs/x.log")},
		{env, "file://" + dir + "/sub/../c.log", "x", filepath.Join(dir, "c.log")}, // cleaned, still inside
		// Relative paths resolve in the root.
		{env, "file://", "c.log", filepath.Join(dir, "c.log")},
		{env, "file:", "c.log", filepath.Join(dir, "c.log")},
		{env, "file:logs/", "d.log", filepath.Join(dir, "logs", "d.log")},
		{env, "file:logs/e.log", "anything", filepath.Join(dir, "logs", "e.log")},
		{env, "file://localhost" + dir + "/", "f.log", filepath.Join(dir, "f.log")},
		// Without Env.FileRoot the root is <data dir>/files.
		{backends.Env{DataDir: data}, "file://", "c.log", filepath.Join(data, "files", "c.log")},
		{backends.Env{DataDir: data}, "file://" + data + "/files/g.log", "x", filepath.Join(data, "files", "g.log")},
	}
	for _, c := range cases {
		st := openURI(t, c.uri, c.env).(*file.Streamer)
		got, err := st.Path(c.stream)
		if err != nil || got != c.want {
			t.Errorf("%s + %q = %q, %v; want %q", c.uri, c.stream, got, err, c.want)
		}
	}
}

// TestRoot: no path a URI or stream name gives reaches outside the root,
// whether absolute, through "..", or through a symlink inside the root
// (42501); the data directory's own files are outside the default root.
func TestRoot(t *testing.T) {
	ctx := context.Background()
	root, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A symlink to the outside, inside the root, and one to the file.
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "secret.txt")); err != nil {
		t.Fatal(err)
	}
	// A symlink that stays inside is fine.
	if err := os.Mkdir(filepath.Join(root, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "in"), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	env := backends.Env{FileRoot: root}
	denied := pgerror.InsufficientPrivilege.String()
	for _, uri := range []string{ // Open only looks at what a URI names
		"file:///etc/passwd", "file://" + secret, "file://" + outside + "/", "file://" + root + "/../x.log",
		"file://" + root + "/out/secret.txt", "file://" + root + "/out/new.log", "file://" + root + "/secret.txt",
		"file:../x.log", "file:out/", "file:///",
	} {
		if err := openErr(uri, env); code(err) != denied {
			t.Errorf("Open %s: %v (code %q), want %s", uri, err, code(err), denied)
		}
	}
	st := openURI(t, "file://"+root+"/", env)
	// (Only files of the test's own: were the check to regress, Send and
	// DropStream would write and delete what they name.)
	for _, name := range []string{secret, "out/secret.txt", "out/new.log", "secret.txt", "../x.log", "alias/../../x.log"} {
		for what, err := range map[string]error{
			"CreateStream": st.CreateStream(ctx, backends.StreamSpec{Name: name}),
			"Scan":         st.Scan(ctx, name, func(int32, []backends.Message) error { return nil }),
			"Consumer":     consumerErr(st, name),
			"Send":         sendErr(st, name),
			"DropStream":   st.DropStream(ctx, name),
		} {
			if code(err) != denied {
				t.Errorf("%s %q: %v (code %q), want %s", what, name, err, code(err), denied)
			}
		}
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != "secret\n" {
		t.Fatalf("the file outside the root changed: %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("files made outside the root: %v", ents)
	}
	// Inside the root, through a symlink that stays inside, works.
	if err := sendErr(st, "alias/ok.log"); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, st, filepath.Join(root, "in", "ok.log")); len(got) != 1 {
		t.Fatalf("read back %d messages", len(got))
	}
	// The default root is <data dir>/files: the data directory's state is
	// outside it.
	data := t.TempDir()
	if err := openErr("file://"+data+"/state/x.log", backends.Env{DataDir: data}); code(err) != denied {
		t.Errorf("a path in the data directory, outside files/: %v, want %s", err, denied)
	}
}

// TestSharedWriter: producers of two Streamers in one process share the
// file's writer; their Sends interleave whole, sequences stay dense.
func TestSharedWriter(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	b := openURI(t, "file://"+dir+"/same.log", backends.Env{FileRoot: dir})
	pa, _ := a.Producer(ctx)
	pb, _ := b.Producer(ctx)
	done := make(chan error, 2)
	for i, p := range []backends.Producer{pa, pb} {
		go func() {
			for j := range 100 {
				var batch []backends.Message
				for k := range 10 {
					batch = append(batch, backends.Message{Stream: "same.log", Payload: fmt.Appendf(nil, "%d-%03d-%d", i, j, k)})
				}
				if err := p.Send(ctx, batch); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	got := scan(t, a, "same.log")
	if len(got) != 2000 {
		t.Fatalf("%d messages", len(got))
	}
	for i := 0; i < len(got); i += 10 {
		for k := range 10 {
			if got[i+k].Sequence != int64(i+k) || !bytes.Equal(got[i+k].Payload[:6], got[i].Payload[:6]) {
				t.Fatalf("batch at %d interleaved: %q", i, got[i+k].Payload)
			}
		}
	}
}

// TestDropAndRecreate: a dropped stream starts over at sequence 0, its
// group positions gone.
func TestDropAndRecreate(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	p, _ := st.Producer(ctx)
	p.Send(ctx, []backends.Message{{Stream: "x.log", Payload: []byte("1")}, {Stream: "x.log", Payload: []byte("2")}})
	c, _ := st.Consumer(ctx, "x.log", backends.ConsumerOptions{Group: "g"})
	msgs, _ := c.Read(ctx, 10)
	c.Ack(ctx, msgs)
	c.Close()
	if err := st.DropStream(ctx, "x.log"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left after DropStream: %v", ents)
	}
	p.Send(ctx, []backends.Message{{Stream: "x.log", Payload: []byte("3")}})
	c, _ = st.Consumer(ctx, "x.log", backends.ConsumerOptions{Group: "g"})
	defer c.Close()
	msgs, err := c.Read(ctx, 10)
	if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != "3" || msgs[0].Sequence != 0 {
		t.Fatalf("after recreate: %v %v", msgs, err)
	}
}

// TestTornBigBatch: a batch larger than the reader's chunk (1 MiB), torn,
// is skipped whole by readers and truncated by the writer; a follower
// re-reads it once it is complete.
func TestTornBigBatch(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	p, _ := st.Producer(ctx)
	small := []backends.Message{{Stream: "big.log", Payload: []byte("first")}}
	if err := p.Send(ctx, small); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(filepath.Join(dir, "big.log"))
	var big []backends.Message
	for i := range 3000 {
		big = append(big, backends.Message{Stream: "big.log", Payload: fmt.Appendf(nil, "%04d%s", i, strings.Repeat("b", 1000))})
	}
	if err := p.Send(ctx, big); err != nil {
		t.Fatal(err)
	}
	st.Close()
	full, _ := os.ReadFile(filepath.Join(dir, "big.log"))
	for _, cut := range []int64{before.Size() + 10, before.Size() + 1<<20 + 5, int64(len(full)) - 1} {
		path := filepath.Join(dir, fmt.Sprintf("cut%d.log", cut))
		os.WriteFile(path, full[:cut], 0o644)
		st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
		name := filepath.Base(path)
		// A follower from another "process" (no writer here yet).
		f, err := st.Consumer(ctx, name, backends.ConsumerOptions{Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := f.Read(ctx, 10000)
		if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != "first" {
			t.Fatalf("cut at %d: follower read %d messages, %v", cut, len(msgs), err)
		}
		tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		if msgs, err := f.Read(tctx, 10000); len(msgs) != 0 || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cut at %d: the torn batch was read: %d messages, %v", cut, len(msgs), err)
		}
		cancel()
		// Complete the file behind the follower's back: it reads the batch.
		os.WriteFile(path, full, 0o644)
		var got []backends.Message
		for len(got) < 3000 {
			tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			msgs, err := f.Read(tctx, 10000)
			cancel()
			if err != nil {
				t.Fatalf("cut at %d: after completing: %d read, %v", cut, len(got), err)
			}
			got = append(got, msgs...)
		}
		if len(got) != 3000 || got[0].Sequence != 1 || got[2999].Sequence != 3000 {
			t.Fatalf("cut at %d: %d messages after completing", cut, len(got))
		}
		f.Close()
		// And a writer truncates a torn copy to the first batch.
		os.WriteFile(path, full[:cut], 0o644)
		if err := sendErr(st, name); err != nil {
			t.Fatal(err)
		}
		if got := scan(t, st, name); len(got) != 2 || string(got[0].Payload) != "first" || got[1].Sequence != 1 {
			t.Fatalf("cut at %d: after recovery %d messages", cut, len(got))
		}
		st.Close()
	}
}
