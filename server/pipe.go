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

	"github.com/fvsql/fvsql/backends"
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
	// Format of the input lines or message payloads: text (one column,
	// line), json or csv.
	Format string
	// Columns declares the input's columns for json and csv
	// ("a BIGINT, b TEXT"); text input has the one column line.
	Columns string
	// Errors gets a report of each input line or message that cannot be
	// decoded (the first maxLineReports of them) and, at the end, how many
	// there were; nil: os.Stderr. Such input is skipped (and, read in a
	// group, acknowledged): the stream goes on.
	Errors io.Writer

	// Source is the backend URI to read instead of standard input
	// ("kafka://h:9092", "redis://h:6379", "file:///dir/"), as in CREATE
	// STREAM … WITH (backend = …); "" or a stdio: URI is standard input.
	Source string
	// Stream is the stream key to read on Source (topic, Redis key, file
	// path); the query's relation is named after it. Required with a
	// backend Source.
	Stream string
	// Mode is PipeRealtime (default: every pipe sees every message) or
	// PipeLoadBalanced (the pipes of one Group share the stream; a message
	// is acknowledged once the rows it produced are written and flushed).
	Mode string
	// Group names the consumer group of load-balanced reading; a Group
	// without a Mode means PipeLoadBalanced.
	Group string
	// From, when not zero, starts at the first message stamped at or
	// after it (backends.ConsumerOptions.StartTime); a backend that
	// cannot seek by time (standard input, text files) fails with 0A000.
	From time.Time
	// UntilEnd stops at the end of the stream present when the pipe
	// opened, so aggregates write their result; by default a backend
	// stream is followed as it grows (tail -f). Standard input ends at
	// EOF either way.
	UntilEnd bool
	// Env is what backends.Open gives the backend (a file root for
	// file:// URIs, a topic prefix).
	Env backends.Env
}

// The reading modes of PipeConfig.Mode.
const (
	PipeRealtime     = "realtime"
	PipeLoadBalanced = "load_balanced"
)

// fromStdin reports whether the pipe reads standard input.
func (c *PipeConfig) fromStdin() bool {
	return c.Source == "" || strings.HasPrefix(strings.ToLower(c.Source), "stdio:")
}

// relationName is the name the query reads the input under.
func (c *PipeConfig) relationName() string {
	if c.fromStdin() && c.Stream == "" {
		return "stdin"
	}
	return c.Stream
}

// validate normalises Mode and rejects settings that conflict.
func (c *PipeConfig) validate() error {
	c.Mode = strings.ToLower(strings.TrimSpace(c.Mode))
	switch c.Mode {
	case "":
		c.Mode = PipeRealtime
		if c.Group != "" {
			c.Mode = PipeLoadBalanced
		}
	case PipeRealtime:
		if c.Group != "" {
			return pgerror.New(pgerror.InvalidParameterValue, "--group is for --mode load_balanced; a realtime pipe sees every message and has no group")
		}
	case PipeLoadBalanced:
		if c.Group == "" {
			return pgerror.New(pgerror.InvalidParameterValue, "--mode load_balanced needs --group NAME: the pipes of one group share the stream")
		}
	default:
		return pgerror.New(pgerror.InvalidParameterValue, "--mode must be realtime or load_balanced, not %q", c.Mode)
	}
	if c.fromStdin() {
		if c.Mode == PipeLoadBalanced {
			return pgerror.New(pgerror.FeatureNotSupported, "standard input has no consumer groups: --mode load_balanced and --group need a --source backend with groups (kafka, redis, file)")
		}
		if !c.From.IsZero() {
			return pgerror.Wrap(backends.ErrCannotSeek, pgerror.FeatureNotSupported,
				"standard input cannot start at a time (--from): it is read live and nothing is stored; use --source with a backend that stores times (kafka, redis, file logs)")
		}
		return nil
	}
	if c.Stream == "" {
		return pgerror.New(pgerror.InvalidParameterValue, "--source needs --stream KEY: the topic, Redis key or file to read")
	}
	return nil
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
	if err := cfg.validate(); err != nil {
		return err
	}
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
	write := func(b *operators.Batch) error {
		buf := make([]byte, 0, 256)
		for _, row := range b.Rows {
			buf = append(enc.Append(buf[:0], row), '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return w.Flush() // a row out as soon as it is known
	}
	dec := &inputDecoder{codec: codec, width: len(rel.ReadColumns()), text: rel.Format == "text", errs: errs}
	if cfg.fromStdin() {
		ds := &linesDataset{in: in, dec: dec}
		err = engine.RunBounded(ctx, plan.Root, pipeResolver{ds}, nil, operators.AbortOnError, write)
	} else {
		err = pipeStream(ctx, cfg, plan.Root, dec, write)
	}
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	dec.summary()
	return err
}

func pipeRelation(cfg PipeConfig) (*catalog.Relation, error) {
	rel := &catalog.Relation{Name: cfg.relationName(), Kind: catalog.Stream, Format: strings.ToLower(cfg.Format), Partitions: 1}
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
	parsed, err := sql.Parse("CREATE STREAM pipe_input (" + cfg.Columns + ")")
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
	if (schema == "" || schema == "public") && name == p.rel.Name {
		return p.rel, nil
	}
	return nil, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist: fvsql pipe reads the stream %q", name, p.rel.Name)
}

type pipeResolver struct{ ds engine.Dataset }

func (p pipeResolver) Dataset(context.Context, string) (engine.Dataset, error) { return p.ds, nil }

// inputDecoder turns input lines or message payloads into rows of the
// pipe's relation: the declared columns decoded by the format's codec,
// then the four metadata columns. What it cannot decode it reports on
// errs (the first maxLineReports) and counts for the summary; the input
// goes on.
type inputDecoder struct {
	codec types.Codec
	width int  // the relation's read width: declared columns, then the metadata ones
	text  bool // text input: a blank line is a row (line = '')
	errs  io.Writer
	unit  string // what an input is called in the summary ("line", "message")
	n     int64  // inputs decoded or tried, blank json and csv lines left out
	bad   int64  // inputs that could not be decoded
}

// decode returns the row of one input, its metadata columns left for the
// caller, or nil when it is no row: undecodable (reported with the
// position where names) or, skipBlank, a blank payload of json or csv.
func (d *inputDecoder) decode(payload []byte, skipBlank bool, where func() string) types.Row {
	if skipBlank && !d.text && len(bytes.TrimSpace(payload)) == 0 {
		return nil
	}
	d.n++
	row := make(types.Row, d.width)
	if err := d.codec.Decode(payload, row[:d.codec.Width()]); err != nil {
		d.bad++
		if d.bad <= maxLineReports {
			fmt.Fprintf(d.errs, "fvsql pipe: %s: %v\n", where(), err)
		}
		return nil
	}
	return row
}

// setMeta fills the metadata columns of row, if the relation has them.
func (d *inputDecoder) setMeta(row types.Row, key types.Value, part int32, off int64, ts time.Time) {
	declared := d.codec.Width()
	if d.width != declared+4 {
		return
	}
	row[declared] = key
	row[declared+1] = types.NewInt(types.Int4, int64(part))
	row[declared+2] = types.NewInt8(off)
	row[declared+3] = types.NewTimestamp(types.TimestampTZ, ts.UnixMicro())
}

// summary reports how many inputs could not be decoded, if any.
func (d *inputDecoder) summary() {
	if d.bad > 0 {
		unit := d.unit
		if unit == "" {
			unit = "line"
		}
		fmt.Fprintf(d.errs, "fvsql pipe: %d of %d %ss could not be decoded and were skipped\n", d.bad, d.n, unit)
	}
}

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
	in  io.Reader
	dec *inputDecoder
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
			row := l.dec.decode(payload, true, func() string { return fmt.Sprintf("line %d", line+1) })
			if row == nil {
				continue
			}
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
			l.dec.setMeta(row, key, part, off, ts)
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
