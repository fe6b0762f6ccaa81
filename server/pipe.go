package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fvsql/fvsql/backends/stdio"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// PipeConfig configures Pipe.
type PipeConfig struct {
	// Format of the input lines: text (one column, line), json or csv.
	Format string
	// Columns declares the input's columns for json and csv
	// ("a BIGINT, b TEXT"); text input has the one column line.
	Columns string
	// Errors gets a report of each input line that cannot be decoded
	// (the first maxLineReports of them) and, at the end, how many there
	// were; nil: os.Stderr. Such lines are skipped: the stream goes on.
	Errors io.Writer
}

// maxLineReports bounds the per-line reports of undecodable input lines;
// the count at the end includes every one.
const maxLineReports = 100

// Pipe runs one SELECT over lines read from in, as the stream "stdin",
// writing result rows to out as JSON lines: fvsql as a filter in a shell
// pipeline. Stateless queries write each row as its input line arrives
// (tail -f works); aggregates write when the input ends. It needs no
// server, broker or data directory: the same planner and operators run
// over the lines.
func Pipe(ctx context.Context, query string, cfg PipeConfig, in io.Reader, out io.Writer) error {
	rel, err := pipeRelation(cfg)
	if err != nil {
		return err
	}
	parsed, err := sql.Parse(query)
	if err != nil {
		return err
	}
	if len(parsed) != 1 {
		return pgerror.New(pgerror.SyntaxError, "fvsql pipe runs exactly one SELECT")
	}
	q, ok := parsed[0].Stmt.(*sql.Query)
	if !ok {
		return pgerror.New(pgerror.FeatureNotSupported, "fvsql pipe runs a SELECT")
	}
	plan, err := planner.PlanQuery(pipeCatalog{rel}, q, nil)
	if err != nil {
		return err
	}
	names := make([]string, len(plan.Columns))
	typs := make([]types.Type, len(plan.Columns))
	for i, c := range plan.Columns {
		names[i], typs[i] = c.Name, c.Type
	}
	enc := types.NewJSONCodec(names, typs)
	codec, err := codecFor(rel)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	errs := cfg.Errors
	if errs == nil {
		errs = os.Stderr
	}
	ds := &linesDataset{in: in, codec: codec, width: len(rel.ReadColumns()), text: rel.Format == "text", errs: errs}
	err = engine.RunBounded(ctx, plan.Root, pipeResolver{ds}, nil, operators.AbortOnError, func(b *operators.Batch) error {
		buf := make([]byte, 0, 256)
		for _, row := range b.Rows {
			buf = append(enc.Append(buf[:0], row), '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return w.Flush() // a row out as soon as it is known
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if ds.bad > 0 {
		fmt.Fprintf(errs, "fvsql pipe: %d of %d lines could not be decoded and were skipped\n", ds.bad, ds.lines)
	}
	return err
}

func pipeRelation(cfg PipeConfig) (*catalog.Relation, error) {
	rel := &catalog.Relation{Name: "stdin", Kind: catalog.Stream, Format: strings.ToLower(cfg.Format), Partitions: 1}
	if rel.Format == "" {
		rel.Format = "text"
	}
	if rel.Format == "text" {
		if cfg.Columns != "" {
			return nil, pgerror.New(pgerror.InvalidParameterValue, "--columns is for json and csv input; text input is one column, line")
		}
		rel.Columns = []catalog.Column{{Name: "line", Type: types.Text}}
		return rel, nil
	}
	if cfg.Columns == "" {
		return nil, pgerror.New(pgerror.InvalidParameterValue, "--columns is required for %s input, e.g. --columns 'id BIGINT, msg TEXT'", rel.Format)
	}
	parsed, err := sql.Parse("CREATE STREAM stdin (" + cfg.Columns + ")")
	if err != nil {
		return nil, pgerror.Wrap(err, pgerror.SyntaxError, "--columns")
	}
	cs := parsed[0].Stmt.(*sql.CreateStream)
	for _, c := range cs.Columns {
		rel.Columns = append(rel.Columns, catalog.Column{Name: c.Name, Type: c.Type})
	}
	return rel, nil
}

type pipeCatalog struct{ rel *catalog.Relation }

func (p pipeCatalog) Lookup(schema, name string) (*catalog.Relation, error) {
	if (schema == "" || schema == "public") && name == "stdin" {
		return p.rel, nil
	}
	return nil, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist: fvsql pipe reads the stream stdin", name)
}

type pipeResolver struct{ ds *linesDataset }

func (p pipeResolver) Dataset(context.Context, string) (engine.Dataset, error) { return p.ds, nil }

// linesDataset reads lines as they arrive and hands them on in batches:
// a batch ends when no further line is immediately available, so a slow
// trickle (tail -f) is not held back waiting for a full batch.
//
// A line may carry the stdio framing `[timestamp | stream_key | sequence |
// shard] payload` (backends/stdio.ParseFrame): the payload is decoded,
// and the frame's parts are the metadata columns _timestamp, _key,
// _offset and _partition. A plain line's are its arrival time, NULL, its
// line number from 0 and 0.
type linesDataset struct {
	in    io.Reader
	codec types.Codec
	width int
	text  bool // text input: a blank line is a row (line = '')
	errs  io.Writer
	lines int64 // lines read, blank ones of json and csv input left out
	bad   int64 // lines that could not be decoded
}

func (l *linesDataset) Scan(ctx context.Context, fn func(int32, *operators.Batch) error) error {
	lines := make(chan []byte, 1024)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(l.in, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr <- err
				}
				return
			}
		}
	}()
	var offset int64
	declared := l.codec.Width()
	for {
		var batch [][]byte
		line, ok := <-lines
		if !ok {
			break
		}
		batch = append(batch, line)
	more:
		for len(batch) < 1024 {
			select {
			case line, ok := <-lines:
				if !ok {
					break more
				}
				batch = append(batch, line)
			default:
				break more
			}
		}
		b := &operators.Batch{}
		now := time.Now()
		for _, raw := range batch {
			line := offset
			offset++
			f, payload, framed := stdio.ParseFrame(trimEOL(raw))
			if !l.text && len(bytes.TrimSpace(payload)) == 0 {
				continue // a blank line of json or csv input is no row
			}
			l.lines++
			row := make(types.Row, l.width)
			if err := l.codec.Decode(payload, row[:declared]); err != nil {
				l.bad++
				if l.bad <= maxLineReports {
					fmt.Fprintf(l.errs, "fvsql pipe: line %d: %v\n", line+1, err)
				}
				continue
			}
			if l.width == declared+4 {
				key, part, off, ts := types.NullValue, int32(0), line, now
				if framed {
					if f.Stream != "" {
						key = types.NewText(f.Stream)
					}
					if f.HasShard {
						part = f.Shard
					}
					if f.HasSeq {
						off = f.Seq
					}
					if !f.Time.IsZero() {
						ts = f.Time
					}
				}
				row[declared] = key
				row[declared+1] = types.NewInt(types.Int4, int64(part))
				row[declared+2] = types.NewInt8(off)
				row[declared+3] = types.NewTimestamp(types.TimestampTZ, ts.UnixMicro())
			}
			b.Rows = append(b.Rows, row)
		}
		if len(b.Rows) > 0 {
			if err := fn(0, b); err != nil {
				return err
			}
		}
	}
	select {
	case err := <-readErr:
		return err
	default:
		return ctx.Err()
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
