package server

// fvsql pipe over a backend stream (--source URI --stream KEY): one
// consumer of the stream, realtime (no group: every pipe sees every
// message) or load-balanced (the pipes of one group share the stream and
// acknowledge what they have written), from the start, or from a time
// (--from), following the stream or to the end present at open
// (--until-end).
//
// Goroutines: a reader goroutine calls Consumer.Read, one call at a time
// and only when the pipe asks for input, so Read never runs while the
// pipe acknowledges (Ack runs on the pipe's goroutine between reads) and
// the "one goroutine uses a Consumer" rule holds except for Lag (below).
//
// At-least-once in a group: a message is acknowledged only after the rows
// it produced are written and flushed. A stateless query (filters,
// projections) runs once per batch of messages, so each batch is written
// and then acknowledged; any other query (aggregates, ORDER BY, LIMIT)
// writes when its input ends, so what it read is acknowledged after its
// last row is flushed, and not at all when it stopped early (LIMIT, an
// interrupt, an error): those messages are delivered again.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fvsql/fvsql/backends"
	_ "github.com/fvsql/fvsql/backends/all" // every URI scheme CREATE STREAM knows
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/types"
)

// ParsePipeTime reads the TIME of `fvsql pipe --from TIME`, as a
// start_time option is read (planner.ParseStartTime): a timestamp
// ("2026-01-02T03:04:05Z", "2026-01-02 03:04:05+02") or a negative
// duration, that long before now ("-15m", "-1h30m", "-1 hour", "2 days
// ago").
func ParsePipeTime(s string, now time.Time) (time.Time, error) {
	us, err := planner.ParseStartTime(s, now)
	if err != nil {
		return time.Time{}, pgerror.New(pgerror.InvalidParameterValue,
			"--from must be a timestamp ('2026-01-02T03:04:05Z', '2026-01-02 03:04:05+02') or a negative duration ('-15m', '-1 hour'), not %q", s)
	}
	return time.UnixMicro(us).UTC(), nil
}

// Reading a backend stream.
const (
	// pipeReadBatch is how many messages one Read asks for.
	pipeReadBatch = 1024
	// lagPoll, idleEnd and stallEnd drive --until-end in a group (see
	// streamReader.next).
	lagPoll  = 250 * time.Millisecond
	idleEnd  = time.Second
	stallEnd = 5 * time.Second
	// retryAfter is the pause before reading again after ErrNotConnected.
	retryAfter = time.Second
)

// pipeStream runs root over cfg.Stream of the backend cfg.Source (cfg
// validated), writing rows through write, which flushes them.
func pipeStream(ctx context.Context, cfg PipeConfig, root plan.Node, dec *inputDecoder, write operators.Emit) error {
	dec.unit = "message"
	st, err := backends.Open(ctx, cfg.Source, cfg.Env)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := backends.ConsumerOptions{Start: backends.Earliest, StartTime: cfg.From, Follow: !cfg.UntilEnd}
	if cfg.Mode == PipeLoadBalanced {
		opts.Group = cfg.Group
	}
	c, err := st.Consumer(ctx, cfg.Stream, opts)
	if err != nil {
		return err
	}
	r := newStreamReader(c, cfg.Stream, opts, dec.errs)
	defer r.close()
	streaming := streamingPlan(root)
	if !streaming && opts.Follow {
		fmt.Fprintf(dec.errs, "fvsql pipe: this query writes its result when its input ends, and --source is followed until interrupted: add --until-end to stop at the stream's end\n")
	}
	if opts.Group != "" && streaming {
		return pipeEachBatch(ctx, root, r, dec, write)
	}
	ds := &messagesDataset{r: r, dec: dec, hold: opts.Group != ""}
	if err := engine.RunBounded(ctx, root, pipeResolver{ds}, nil, operators.AbortOnError, write); err != nil {
		return err
	}
	if !ds.ended {
		return nil // stopped early (LIMIT): what was read is delivered again
	}
	return r.ack(ctx, ds.held) // write flushed every row: the messages are done
}

// streamingPlan reports whether root writes the rows of each input batch
// while it processes the batch and keeps nothing across batches: a source
// under stateless steps only. Such a plan can run once per batch.
func streamingPlan(root plan.Node) bool {
	switch n := root.(type) {
	case *plan.Source:
		return len(n.Lookup) == 0
	case *plan.Chain:
		src, ok := n.Input.(*plan.Source)
		if !ok || len(src.Lookup) > 0 || len(n.Subqueries) > 0 {
			return false
		}
		for i := range n.Steps {
			if !n.Steps[i].Stateless() {
				return false
			}
		}
		return true
	}
	return false
}

// pipeEachBatch runs a streaming plan once per batch of messages and
// acknowledges the batch once its rows are written and flushed.
func pipeEachBatch(ctx context.Context, root plan.Node, r *streamReader, dec *inputDecoder, write operators.Emit) error {
	for {
		msgs, err := r.next(ctx)
		if errors.Is(err, backends.ErrEndOfStream) {
			return nil
		}
		if err != nil {
			return err
		}
		if rows := dec.messageRows(msgs); len(rows) > 0 {
			if err := engine.RunBounded(ctx, root, pipeResolver{staticDataset(rows)}, nil, operators.AbortOnError, write); err != nil {
				return err
			}
		}
		// Undecodable messages are acknowledged too: reported and counted,
		// they would fail the same way again.
		if err := r.ack(ctx, msgs); err != nil {
			return err
		}
	}
}

// messageRows decodes messages into rows, their metadata columns from
// the message (Key, Shard, Sequence, Timestamp).
func (d *inputDecoder) messageRows(msgs []backends.Message) []types.Row {
	rows := make([]types.Row, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		row := d.decode(m.Payload, false, func() string {
			if m.ID != "" {
				return fmt.Sprintf("entry %s", m.ID)
			}
			return fmt.Sprintf("partition %d offset %d", m.Shard, m.Sequence)
		})
		if row == nil {
			continue
		}
		d.setMeta(row, keyText(m.Key), m.Shard, m.Sequence, m.Timestamp)
		rows = append(rows, row)
	}
	return rows
}

// messagesDataset is the pipe's stream read through a streamReader, for
// a plan run once over the whole input.
type messagesDataset struct {
	r       *streamReader
	dec     *inputDecoder
	hold    bool               // keep what is read, to acknowledge once the run is written
	held    []backends.Message // read, not acknowledged (payloads dropped)
	scanned bool
	ended   bool // the scan reached the end of the input
}

func (m *messagesDataset) Scan(ctx context.Context, fn func(int32, *operators.Batch) error) error {
	if m.scanned {
		return pgerror.New(pgerror.FeatureNotSupported, "fvsql pipe reads its stream once: a query that reads %q twice (a self-join, a subquery over it) is not supported", m.r.stream)
	}
	m.scanned = true
	for {
		msgs, err := m.r.next(ctx)
		if errors.Is(err, backends.ErrEndOfStream) {
			m.ended = true
			return nil
		}
		if err != nil {
			return err
		}
		rows := m.dec.messageRows(msgs)
		if m.hold {
			for _, msg := range msgs {
				msg.Payload, msg.Key = nil, nil
				m.held = append(m.held, msg)
			}
			m.r.unacked += len(msgs)
		}
		if len(rows) > 0 {
			if err := fn(0, &operators.Batch{Rows: rows}); err != nil {
				return err
			}
		}
	}
}

// streamReader reads a Consumer on a goroutine of its own, one Read per
// request, so that a pipe reading in a group and not following can stop
// although the backend does not say its share has ended (a Kafka group
// member only knows its own partitions): see next.
type streamReader struct {
	c       backends.Consumer
	stream  string
	lag     backends.Lagger // non-nil: --until-end in a group, ended by lag
	want    chan struct{}
	results chan readResult
	cancel  context.CancelFunc
	pending bool // a Read was asked for and its result not taken
	ended   bool
	unacked int // messages read and held, not acknowledged
}

type readResult struct {
	msgs []backends.Message
	err  error
}

func newStreamReader(c backends.Consumer, stream string, o backends.ConsumerOptions, errs io.Writer) *streamReader {
	ctx, cancel := context.WithCancel(context.Background())
	r := &streamReader{c: c, stream: stream, want: make(chan struct{}, 1), results: make(chan readResult, 1), cancel: cancel}
	if l, ok := c.(backends.Lagger); ok && o.Group != "" && !o.Follow {
		r.lag = l
	}
	go func() {
		defer close(r.results)
		retrying := false
		for range r.want {
			for {
				msgs, err := c.Read(ctx, pipeReadBatch)
				if errors.Is(err, backends.ErrNotConnected) && ctx.Err() == nil {
					if !retrying {
						fmt.Fprintf(errs, "fvsql pipe: %v; retrying\n", err)
						retrying = true
					}
					select {
					case <-time.After(retryAfter):
						continue
					case <-ctx.Done():
					}
				}
				retrying = false
				r.results <- readResult{msgs, err}
				if err != nil {
					return
				}
				break
			}
		}
	}()
	return r
}

// next returns the next messages, or ErrEndOfStream at the end.
//
// Reading in a group to the end present at open, a member may never hear
// of the end from its backend (Kafka's consumer waits for the partitions
// it was not assigned). So while no message comes, the group's lag is
// polled: once this pipe has waited idleEnd and the group has nothing
// unacknowledged but what this pipe holds, or the lag has not moved for
// stallEnd (the other members hold the rest, as aggregating pipes do
// until their end), the input has ended. Lag runs beside the Read in
// progress (Kafka's and Redis's are separate requests of their clients).
func (r *streamReader) next(ctx context.Context) ([]backends.Message, error) {
	if r.ended {
		return nil, backends.ErrEndOfStream
	}
	if !r.pending {
		r.want <- struct{}{}
		r.pending = true
	}
	var tick <-chan time.Time
	if r.lag != nil {
		t := time.NewTicker(lagPoll)
		defer t.Stop()
		tick = t.C
	}
	idle := time.Now()
	lastLag, lagSince := int64(-1), time.Now()
	for {
		select {
		case res, ok := <-r.results:
			r.pending = false
			if !ok {
				r.ended = true
				return nil, backends.ErrEndOfStream
			}
			return r.took(res)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-tick:
			if time.Since(idle) < idleEnd {
				continue
			}
			lag, err := r.lag.Lag(ctx)
			if err != nil {
				continue // the Read in progress reports a backend that is gone
			}
			if lag != lastLag {
				lastLag, lagSince = lag, time.Now()
			}
			if lag > int64(r.unacked) && time.Since(lagSince) < stallEnd {
				continue
			}
			// The end: stop the Read; what it returned meanwhile is
			// still the pipe's (and, not acknowledged, safe to drop).
			r.cancel()
			res, ok := <-r.results
			r.pending, r.ended = false, true
			if ok && len(res.msgs) > 0 {
				return res.msgs, nil
			}
			return nil, backends.ErrEndOfStream
		}
	}
}

func (r *streamReader) took(res readResult) ([]backends.Message, error) {
	if res.err != nil {
		r.ended = true
		if len(res.msgs) > 0 {
			return res.msgs, nil
		}
		return nil, res.err
	}
	return res.msgs, nil
}

// ack acknowledges msgs; no Read runs meanwhile (next returned).
func (r *streamReader) ack(ctx context.Context, msgs []backends.Message) error {
	for len(msgs) > 0 {
		n := min(len(msgs), 4096)
		if err := r.c.Ack(ctx, msgs[:n]); err != nil {
			return err
		}
		msgs = msgs[n:]
		r.unacked = max(r.unacked-n, 0)
	}
	return nil
}

// close stops the reader goroutine and closes the consumer.
func (r *streamReader) close() {
	r.cancel()
	close(r.want)
	for range r.results {
	}
	r.c.Close()
}
