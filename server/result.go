package server

import (
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/types"
)

// rowsResult is a result computed up front.
type rowsResult struct {
	rows    []types.Row
	tag     string
	notices []string
	i       int
}

func (r *rowsResult) Next(context.Context) (types.Row, error) {
	if r.i >= len(r.rows) {
		return nil, io.EOF
	}
	r.i++
	return r.rows[r.i-1], nil
}

func (r *rowsResult) Tag() string       { return r.tag }
func (r *rowsResult) Close()            {}
func (r *rowsResult) Notices() []string { return r.notices }

var _ pgwire.NoticeResult = (*rowsResult)(nil)

func tagOnly(tag string) *rowsResult { return &rowsResult{tag: tag} }

// streamResult streams the rows a producer goroutine emits, so that large
// results are never held in memory at once; the producer blocks while the
// client is slow.
type streamResult struct {
	cancel  context.CancelFunc
	ch      chan []types.Row
	errCh   chan error
	cur     []types.Row
	n       int64
	done    bool
	err     error
	tagVerb string
	once    sync.Once
	notices func() []string
	release func() // called once by Close (a statement_timeout's timer), or nil
}

// newStreamResult starts run in a goroutine; run sends rows through emit.
func newStreamResult(ctx context.Context, verb string, run func(ctx context.Context, emit operators.Emit) error) *streamResult {
	ctx, cancel := context.WithCancel(ctx)
	r := &streamResult{cancel: cancel, ch: make(chan []types.Row, 8), errCh: make(chan error, 1), tagVerb: verb}
	go func() {
		defer close(r.ch)
		r.errCh <- run(ctx, func(b *operators.Batch) error {
			rows := append([]types.Row(nil), b.Rows...) // operators reuse their batches
			select {
			case r.ch <- rows:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
	}()
	return r
}

// Next returns the next row; a cancelled ctx ends the result.
func (r *streamResult) Next(ctx context.Context) (types.Row, error) {
	row, err := r.NextCtx(ctx)
	if err != nil && !r.done { // ctx ended before the stream did
		r.Close()
	}
	return row, err
}

// NextCtx is Next for a caller whose ctx must not end the result when it
// is cancelled (a FETCH from a cursor: the cursor lives on).
func (r *streamResult) NextCtx(ctx context.Context) (types.Row, error) {
	for len(r.cur) == 0 {
		if r.done {
			if r.err != nil {
				return nil, r.err
			}
			return nil, io.EOF
		}
		select {
		case rows, ok := <-r.ch:
			if !ok {
				r.done = true
				r.err = <-r.errCh
				continue
			}
			r.cur = rows
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	row := r.cur[0]
	r.cur = r.cur[1:]
	r.n++
	return row, nil
}

// TryNext returns a row if one is available now (ok false otherwise).
func (r *streamResult) TryNext() (types.Row, bool, error) {
	if len(r.cur) == 0 && !r.done {
		select {
		case rows, ok := <-r.ch:
			if !ok {
				r.done = true
				r.err = <-r.errCh
			} else {
				r.cur = rows
			}
		default:
			return nil, false, nil
		}
	}
	if len(r.cur) == 0 {
		if r.err != nil {
			return nil, false, r.err
		}
		return nil, false, io.EOF
	}
	row := r.cur[0]
	r.cur = r.cur[1:]
	r.n++
	return row, true, nil
}

func (r *streamResult) Tag() string { return r.tagVerb + " " + strconv.FormatInt(r.n, 10) }

func (r *streamResult) Notices() []string {
	if r.notices == nil {
		return nil
	}
	return r.notices()
}

func (r *streamResult) Close() {
	r.once.Do(func() {
		r.cancel()
		if r.release != nil {
			defer r.release()
		}
		for range r.ch {
		}
		if !r.done {
			r.done = true
			<-r.errCh
		}
	})
}

var _ pgwire.NoticeResult = (*streamResult)(nil)
