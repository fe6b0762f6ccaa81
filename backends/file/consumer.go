package file

import (
	"context"
	"math"
	"os"
	"sort"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// pollInterval bounds how long a following consumer takes to notice data
// appended by another process (a writer in this process wakes it at once).
const pollInterval = 50 * time.Millisecond

// consumer reads one file with its own read handle.
type consumer struct {
	lf     *logFile
	path   string
	stream string
	o      backends.ConsumerOptions
	f      *os.File
	src    source // nil until the file's format is known
	end    int64  // not following: the physical end present at open
	ready  []backends.Message
	flt    filter
	grp    *groupPos
	track  []delivered // group: delivered messages in order, from head
	head   int
}

type delivered struct {
	seq, next int64 // next: lines, the byte offset after the line
	acked     bool
}

var (
	_ backends.Consumer = (*consumer)(nil)
	_ backends.Seeker   = (*consumer)(nil)
)

// Consumer opens a consumer of a stream file. Without a group it starts
// at Start (or StartTime, which replaces it: the first message stamped at
// or after it, found like SeekTime); with one, where the group's side
// file says (else as without). A group has one consumer at a time; groups
// do not share messages. Text files have no per-line times: StartTime is
// refused there (0A000, backends.ErrCannotSeek) — by Consumer, or by the
// first Read when the file was empty at open.
func (s *Streamer) Consumer(_ context.Context, stream string, o backends.ConsumerOptions) (backends.Consumer, error) {
	path, err := s.cfg.resolve(stream)
	if err != nil {
		return nil, err
	}
	f, err := openRead(path)
	if err != nil {
		return nil, err
	}
	c := &consumer{lf: acquire(path), path: path, stream: stream, o: o, f: f}
	ok := false
	defer func() {
		if !ok {
			_ = c.Close()
		}
	}()
	if c.end, err = c.lf.readLimit(f); err != nil {
		return nil, err
	}
	if o.Group != "" {
		if c.grp, err = openGroupPos(path, o.Group); err != nil {
			return nil, err
		}
	}
	if err := c.begin(c.end); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// begin decides the format and the start position once the file has one.
func (c *consumer) begin(limit int64) error {
	src, err := newSource(c.f, limit)
	if err != nil || src == nil {
		return err
	}
	if lr, ok := src.(*lineReader); ok {
		if !c.o.StartTime.IsZero() {
			return cannotSeekText(c.path) // again at every Read
		}
		lr.trackOffs = c.grp != nil
	}
	c.src = src
	switch r := src.(type) {
	case *logReader:
		switch {
		case c.grp != nil && c.grp.has:
			return c.seekLog(limit, false, c.grp.seq, 0, filter{minSeq: c.grp.seq})
		case !c.o.StartTime.IsZero():
			ts := ceilMicro(c.o.StartTime)
			return c.seekLog(limit, true, 0, ts, filter{minTs: ts, timeSet: true})
		case c.o.Start == backends.Latest:
			// Skip to the committed end: from the last beacon, parse and
			// drop whole batches.
			at, err := seekStart(c.f, r.lay, limit, false, math.MaxInt64, 0)
			if err != nil {
				return ioError(err, "file: %s", c.path)
			}
			r.seekTo(at)
			skip := filter{minSeq: math.MaxInt64}
			for {
				_, moved, err := r.read(c.stream, nil, 1, limit, false, &skip)
				if err != nil {
					return ioError(err, "file: read %s", c.path)
				}
				if !moved {
					break
				}
			}
		}
	case *lineReader:
		switch {
		case c.grp != nil && c.grp.has:
			r.moveTo(c.grp.off, c.grp.seq)
		case c.o.Start == backends.Latest:
			// Skip every complete line present now.
			skip := filter{minSeq: math.MaxInt64}
			for {
				_, moved, err := r.read(c.stream, nil, 1<<20, limit, false, &skip)
				if err != nil {
					return ioError(err, "file: read %s", c.path)
				}
				if !moved {
					break
				}
			}
		}
	}
	return nil
}

func (c *consumer) limit() (int64, error) {
	if !c.o.Follow {
		return c.end, nil
	}
	return c.lf.readLimit(c.f)
}

// Read implements backends.Consumer.
func (c *consumer) Read(ctx context.Context, want int) ([]backends.Message, error) {
	want = min(max(want, 1), 1<<20)
	for {
		if len(c.ready) > 0 {
			return c.take(want), nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		wake := c.lf.wait()
		limit, err := c.limit()
		if err != nil {
			return nil, err
		}
		moved := false
		if c.src == nil {
			if err := c.begin(limit); err != nil {
				return nil, err
			}
		}
		if c.src != nil {
			c.ready, moved, err = c.src.read(c.stream, c.ready, want, limit, !c.o.Follow, &c.flt)
			if err != nil {
				return nil, ioError(err, "file: read %s", c.path)
			}
		}
		if len(c.ready) > 0 || moved {
			continue
		}
		if !c.o.Follow {
			return nil, backends.ErrEndOfStream
		}
		t := time.NewTimer(pollInterval)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
}

// take hands out up to n ready messages (the caller's from now on).
func (c *consumer) take(n int) []backends.Message {
	n = min(n, len(c.ready))
	out := c.ready[:n:n]
	c.ready = c.ready[n:]
	if len(c.ready) == 0 {
		c.ready = nil
	}
	if c.grp != nil {
		lr, _ := c.src.(*lineReader)
		for i, m := range out {
			d := delivered{seq: m.Sequence}
			if lr != nil {
				d.next = lr.offs[i]
			}
			c.track = append(c.track, d)
		}
		if lr != nil {
			lr.offs = lr.offs[n:]
		}
	}
	return out
}

// Ack implements backends.Consumer: the group's position moves past every
// message acknowledged without a gap before it, and is fsynced, so what
// was not acknowledged is read again by the group's next consumer.
func (c *consumer) Ack(_ context.Context, msgs []backends.Message) error {
	if c.grp == nil || len(msgs) == 0 {
		return nil
	}
	q := c.track[c.head:]
	for _, m := range msgs {
		i := sort.Search(len(q), func(i int) bool { return q[i].seq >= m.Sequence })
		if i < len(q) && q[i].seq == m.Sequence {
			q[i].acked = true
		}
	}
	var last *delivered
	for c.head < len(c.track) && c.track[c.head].acked {
		last = &c.track[c.head]
		c.head++
	}
	if last == nil {
		return nil
	}
	if err := c.grp.store(last.seq+1, last.next); err != nil {
		return err
	}
	if c.head > 1024 && c.head > len(c.track)/2 {
		c.track = append(c.track[:0], c.track[c.head:]...)
		c.head = 0
	}
	return nil
}

// Close implements backends.Consumer.
func (c *consumer) Close() error {
	if c.grp != nil {
		_ = c.grp.close()
		c.grp = nil
	}
	if c.f != nil {
		_ = c.f.Close()
		c.f = nil
	}
	if c.lf != nil {
		c.lf.release()
		c.lf = nil
	}
	return nil
}

// Seek implements backends.Seeker: a binary search over the beacons, then
// a scan of about one block (text files: a scan from the start).
func (c *consumer) Seek(_ context.Context, seq int64) error {
	limit, err := c.limit()
	if err != nil {
		return err
	}
	if c.src == nil {
		c.flt = filter{minSeq: seq}
		return nil
	}
	c.resetDelivery()
	if r, ok := c.src.(*lineReader); ok {
		r.reset()
		c.flt = filter{minSeq: seq}
		return nil
	}
	return c.seekLog(limit, false, seq, 0, filter{minSeq: seq})
}

// SeekTime implements backends.Seeker for logs: beacons carry the greatest
// timestamp before them, so the search is exact even when timestamps do
// not increase. Text files have no per-line times: not supported.
func (c *consumer) SeekTime(_ context.Context, t time.Time) error {
	limit, err := c.limit()
	if err != nil {
		return err
	}
	if _, ok := c.src.(*lineReader); ok {
		return cannotSeekText(c.path)
	}
	ts := ceilMicro(t)
	if c.src == nil {
		c.flt = filter{minTs: ts, timeSet: true}
		return nil
	}
	c.resetDelivery()
	return c.seekLog(limit, true, 0, ts, filter{minTs: ts, timeSet: true})
}

// ceilMicro is t in unix µs, the log's precision, rounded up: the first
// message at or after t is the first stamped at or after ceilMicro(t).
func ceilMicro(t time.Time) int64 {
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

func cannotSeekText(path string) error {
	return pgerror.Wrap(backends.ErrCannotSeek, pgerror.FeatureNotSupported,
		"file: %s is a text file: its lines have no times to seek or start at (SeekTime, StartTime)", path)
}

func (c *consumer) seekLog(limit int64, byTime bool, seq, ts int64, f filter) error {
	r := c.src.(*logReader)
	at, err := seekStart(c.f, r.lay, limit, byTime, seq, ts)
	if err != nil {
		return ioError(err, "file: %s", c.path)
	}
	r.seekTo(at)
	c.flt = f
	return nil
}

// resetDelivery forgets buffered and delivered-but-unacknowledged messages
// at a seek (acknowledging them later does not move the group).
func (c *consumer) resetDelivery() {
	c.ready = nil
	c.track, c.head = nil, 0
	if lr, ok := c.src.(*lineReader); ok {
		lr.offs = nil
	}
}
