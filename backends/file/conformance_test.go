package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/backends/conformance"
	_ "github.com/fvsql/fvsql/backends/file"
	"github.com/fvsql/fvsql/pgerror"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, query string }{
		{"default", ""},
		{"small-blocks", "?block_size=1024"}, // many beacons: seeks and recovery cross blocks
	} {
		t.Run(c.name, func(t *testing.T) {
			uri := "file://" + dir + "/" + c.query
			conformance.Run(t, func(t *testing.T) backends.Streamer {
				st, err := backends.Open(context.Background(), uri, backends.Env{FileRoot: dir})
				if err != nil {
					t.Fatalf("open %s: %v", uri, err)
				}
				return st
			}, conformance.Caps{
				Keys: true, BinaryPayloads: true, Timestamps: true,
				Bounded: true, ExactEnd: true, Replay: true, Durable: true, Latest: true,
				Groups: true, CrashRedelivery: true, PartialAck: true,
				Seek: true, StartTime: true, Realtime: true,
				Positioned: true, ThroughputN: 100_000,
			})
		})
	}
}

// TestStartTimeTextFile: a text file's lines have no times, so a consumer
// starting at a time is refused (0A000, ErrCannotSeek): at open when the
// file has lines, at the first Read when it was empty at open.
func TestStartTimeTextFile(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte("{\"a\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	for _, o := range []backends.ConsumerOptions{{StartTime: time.Now()}, {StartTime: time.Now(), Group: "g"}} {
		if c, err := st.Consumer(ctx, "rows.jsonl", o); !errors.Is(err, backends.ErrCannotSeek) || code(err) != pgerror.FeatureNotSupported.String() {
			if c != nil {
				c.Close()
			}
			t.Fatalf("Consumer(%+v) of a text file: %v, want ErrCannotSeek (0A000)", o, err)
		}
	}
	c, err := st.Consumer(ctx, "empty.jsonl", backends.ConsumerOptions{StartTime: time.Now(), Follow: true})
	if err != nil {
		t.Fatalf("Consumer of an empty file: %v", err)
	}
	defer c.Close()
	if err := os.WriteFile(filepath.Join(dir, "empty.jsonl"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and again: the consumer does not start reading lines
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msgs, err := c.Read(rctx, 10)
		cancel()
		if len(msgs) != 0 || !errors.Is(err, backends.ErrCannotSeek) || code(err) != pgerror.FeatureNotSupported.String() {
			t.Fatalf("Read of a text file with StartTime: %d messages, %v; want ErrCannotSeek (0A000)", len(msgs), err)
		}
	}
	// A log starts at the time.
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "s.log"}); err != nil {
		t.Fatal(err)
	}
	p, _ := st.Producer(ctx)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var msgs []backends.Message
	for i := range 10 {
		msgs = append(msgs, backends.Message{Stream: "s.log", Timestamp: base.Add(time.Duration(i) * time.Microsecond), Payload: []byte{byte('0' + i)}})
	}
	if err := p.Send(ctx, msgs); err != nil {
		t.Fatal(err)
	}
	// Below the log's µs precision: rounded up, not down.
	lc, err := st.Consumer(ctx, "s.log", backends.ConsumerOptions{StartTime: base.Add(3*time.Microsecond + 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	got, err := lc.Read(ctx, 100)
	if err != nil || len(got) != 6 || string(got[0].Payload) != "4" {
		t.Fatalf("log from StartTime: %d messages, %v; want 6 from \"4\"", len(got), err)
	}
}
