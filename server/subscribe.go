package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/fvsql/fvsql/backends/kafka"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// SUBSCRIBE streams what a relation receives from now on: a stream's new
// rows; a view's current rows (op insert) followed by its changes (op
// insert, update_before then update, delete: as its <view>_changes). It
// runs until the client cancels it or, in a cursor, until the cursor is
// closed.

// planSubscribe returns the columns of a subscription and a function that
// starts it. The function reads where the subscription starts before it
// returns, so that a row written after the SUBSCRIBE or DECLARE statement
// completes is always in the subscription (reading the offsets in the
// result's goroutine raced with the session's next INSERT).
func (s *session) planSubscribe(sub *sql.Subscribe) ([]pgwire.Column, func(ctx context.Context) (*streamResult, error), error) {
	if sub.Query != nil {
		return nil, nil, pgerror.NotSupported("SUBSCRIBE to a query (subscribe to a stream or view, or CREATE one)")
	}
	rel, err := s.srv.cat.Lookup("", sub.Name)
	if err != nil {
		return nil, nil, err
	}
	var startTime *time.Time
	for _, o := range sub.Options {
		if o.Key != planner.OptStartTime {
			return nil, nil, pgerror.New(pgerror.InvalidParameterValue, "unrecognized SUBSCRIBE option %q", o.Key).
				WithHint("SUBSCRIBE takes start_time.")
		}
		if rel.Kind != catalog.Stream {
			return nil, nil, pgerror.New(pgerror.FeatureNotSupported, "start_time applies to SUBSCRIBE to a stream, and %q is a %s", rel.Name, rel.Kind).
				WithDetail("A view's subscription starts with its current rows.")
		}
		us, err := planner.ParseStartTime(o.Value, time.Now())
		if err != nil {
			return nil, nil, err
		}
		t := time.UnixMicro(us)
		startTime = &t
	}
	switch rel.Kind {
	case catalog.Stream:
		if rel.Backend != "" {
			return nil, nil, pgerror.NotSupported("SUBSCRIBE to a stream on %s", catalog.RedactURI(rel.Backend))
		}
		cols := make([]pgwire.Column, len(rel.Columns))
		for i, c := range rel.Columns {
			cols[i] = pgwire.Column{Name: c.Name, Type: c.Type, TableOID: rel.OID, AttNum: int16(i + 1)}
		}
		return cols, func(ctx context.Context) (*streamResult, error) {
			start, err := s.srv.kafka.StableEnds(ctx, rel.Topic)
			if startTime != nil {
				start, err = s.srv.kafka.OffsetsAt(ctx, rel.Topic, *startTime)
			}
			if err != nil {
				return nil, err
			}
			return newStreamResult(ctx, "SUBSCRIBE", func(ctx context.Context, emit operators.Emit) error {
				return s.srv.tailFrom(ctx, rel, start, emit)
			}), nil
		}, nil
	case catalog.MaterializedView:
		changes, ok := s.srv.cat.Get(rel.Name + planner.ChangesSuffix)
		if !ok {
			return nil, nil, pgerror.New(pgerror.UndefinedTable, "view %q has no changes stream", rel.Name)
		}
		cols := []pgwire.Column{{Name: "op", Type: types.Text}}
		for _, c := range rel.Columns {
			cols = append(cols, pgwire.Column{Name: c.Name, Type: c.Type})
		}
		return cols, func(ctx context.Context) (*streamResult, error) {
			start, err := s.srv.kafka.StableEnds(ctx, changes.Topic)
			if err != nil {
				return nil, err
			}
			return newStreamResult(ctx, "SUBSCRIBE", func(ctx context.Context, emit operators.Emit) error {
				return s.srv.subscribeView(ctx, rel, changes, start, emit)
			}), nil
		}, nil
	}
	return nil, nil, pgerror.New(pgerror.WrongObjectType, "cannot subscribe to %s %q", rel.Kind, rel.Name)
}

// subscribeView emits the view's current rows, then its changes from
// start, the offsets the changes stream had before the snapshot was read.
func (s *Server) subscribeView(ctx context.Context, view, changes *catalog.Relation, start map[int32]int64, emit operators.Emit) error {
	ds, err := (&datasets{srv: s}).Dataset(ctx, planner.DatasetName(view))
	if err != nil {
		return err
	}
	insert := types.NewText("insert")
	err = ds.Scan(ctx, func(_ int32, b *operators.Batch) error {
		out := &operators.Batch{Rows: make([]types.Row, len(b.Rows))}
		for i, r := range b.Rows {
			out.Rows[i] = append(types.Row{insert}, r...)
		}
		return emit(out)
	})
	if err != nil {
		return err
	}
	return s.tailFrom(ctx, changes, start, emit)
}

func (s *Server) tailFrom(ctx context.Context, rel *catalog.Relation, from map[int32]int64, emit operators.Emit) error {
	codec, err := codecFor(rel)
	if err != nil {
		return err
	}
	tl, err := s.kafka.Tail(rel.Topic, from, kafka.TailOptions{})
	if err != nil {
		return err
	}
	defer tl.Close()
	width := len(rel.Columns)
	for {
		fetched, err := tl.Poll(ctx)
		if ctx.Err() != nil {
			return ctx.Err() // the session maps it to its cause (cancel, shutdown)
		}
		if err != nil {
			return pgerror.Wrap(err, pgerror.IOError, "subscribe")
		}
		b := &operators.Batch{}
		for _, m := range fetched.Messages {
			row := make(types.Row, width)
			if codec.Decode(m.Payload, row) == nil {
				b.Rows = append(b.Rows, row)
			}
		}
		if len(b.Rows) > 0 {
			if err := emit(b); err != nil {
				return err
			}
		}
	}
}

// cursor is a DECLAREd cursor: a result the session pulls from with FETCH.
type cursor struct {
	cols      []pgwire.Column
	res       *streamResult
	subscribe bool // rows keep coming: FETCH returns what is there, waiting for one
	cancel    context.CancelFunc
}

func (c *cursor) close() {
	c.cancel()
	c.res.Close()
}

func (s *session) declare(d *sql.DeclareCursor, params []types.Type) (*statement, error) {
	var cols []pgwire.Column
	var start func(ctx context.Context, args []types.Value) (*streamResult, error)
	subscribe := d.Subscribe != nil
	if subscribe {
		c, run, err := s.planSubscribe(d.Subscribe)
		if err != nil {
			return nil, err
		}
		cols, start = c, func(ctx context.Context, _ []types.Value) (*streamResult, error) { return run(ctx) }
	} else {
		st, err := s.planQuery(d.Query, params)
		if err != nil {
			return nil, err
		}
		cols = st.cols
		start = func(ctx context.Context, args []types.Value) (*streamResult, error) {
			r, err := st.exec(ctx, args)
			if err != nil {
				return nil, err
			}
			if rows, ok := r.(*rowsResult); ok { // a point lookup's row
				return newStreamResult(ctx, "SELECT", func(_ context.Context, emit operators.Emit) error {
					return emit(&operators.Batch{Rows: rows.rows})
				}), nil
			}
			return r.(*streamResult), nil
		}
	}
	return &statement{params: params, exec: func(_ context.Context, args []types.Value) (pgwire.Result, error) {
		if _, ok := s.cursors[d.Name]; ok {
			return nil, pgerror.New(pgerror.DuplicateCursor, "cursor %q already exists", d.Name)
		}
		// A cursor outlives the DECLARE: it runs on the session's context.
		ctx, cancel := context.WithCancel(s.ctx)
		res, err := start(ctx, args)
		if err != nil {
			cancel()
			return nil, err
		}
		s.cursors[d.Name] = &cursor{cols: cols, res: res, subscribe: subscribe, cancel: cancel}
		return tagOnly("DECLARE CURSOR"), nil
	}}, nil
}

func (s *session) fetch(f *sql.Fetch) (*statement, error) {
	c, ok := s.cursors[f.Cursor]
	if !ok {
		return nil, pgerror.New(pgerror.InvalidCursorName, "cursor %q does not exist", f.Cursor)
	}
	return &statement{cols: c.cols, exec: func(ctx context.Context, _ []types.Value) (pgwire.Result, error) {
		var rows []types.Row
		for f.Count < 0 || int64(len(rows)) < f.Count {
			var row types.Row
			var err error
			if c.subscribe && len(rows) > 0 {
				var ok bool
				if row, ok, err = c.res.TryNext(); err == nil && !ok {
					break // what has arrived; FETCH does not wait for more
				}
			} else {
				row, err = c.res.NextCtx(ctx)
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
		return &rowsResult{rows: rows, tag: fmt.Sprintf("FETCH %d", len(rows))}, nil
	}}, nil
}

func (s *session) closeCursor(name string) (pgwire.Result, error) {
	if name == "" {
		for n, c := range s.cursors {
			c.close()
			delete(s.cursors, n)
		}
		return tagOnly("CLOSE CURSOR ALL"), nil
	}
	c, ok := s.cursors[name]
	if !ok {
		return nil, pgerror.New(pgerror.InvalidCursorName, "cursor %q does not exist", name)
	}
	c.close()
	delete(s.cursors, name)
	return tagOnly("CLOSE CURSOR"), nil
}

// DescribeCursor implements pgwire.CursorDescriber.
func (s *session) DescribeCursor(name string) ([]pgwire.Column, bool) {
	c, ok := s.cursors[name]
	if !ok {
		return nil, false
	}
	return c.cols, true
}

var _ pgwire.CursorDescriber = (*session)(nil)
