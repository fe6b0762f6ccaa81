package server

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// COPY moves rows between a client and fvsql in PostgreSQL's COPY formats
// (types.CopyEncoder, types.CopyDecoder): COPY relation|(query) TO STDOUT
// runs the bounded query and streams its rows out; COPY (SUBSCRIBE …) TO
// STDOUT streams a subscription until the client cancels; COPY stream
// FROM STDIN writes the rows like one multi-row INSERT. Files and programs
// on the server are refused, as PostgreSQL refuses them to non-superusers.

func (s *session) planCopy(c *sql.Copy) (*statement, error) {
	if c.Target == "file" || c.Target == "program" {
		return nil, copyFileRefused(c)
	}
	if c.From {
		return s.planCopyFrom(c)
	}
	var (
		cols []pgwire.Column
		run  func(ctx context.Context, args []types.Value) (pgwire.Result, error)
	)
	switch {
	case c.Subscribe != nil:
		scols, start, err := s.planSubscribe(c.Subscribe)
		if err != nil {
			return nil, err
		}
		cols = scols
		run = func(ctx context.Context, _ []types.Value) (pgwire.Result, error) {
			r, err := start(ctx)
			if err != nil {
				return nil, err
			}
			return r, nil
		}
	default:
		q := c.Query
		if q == nil {
			// COPY relation [(columns)] is SELECT columns FROM relation.
			list := "*"
			if len(c.Columns) > 0 {
				idents := make([]string, len(c.Columns))
				for i, n := range c.Columns {
					idents[i] = sql.Ident(n)
				}
				list = strings.Join(idents, ", ")
			}
			parts := strings.Split(c.Table, ".")
			for i, p := range parts {
				parts[i] = sql.Ident(p)
			}
			parsed, err := sql.Parse("SELECT " + list + " FROM " + strings.Join(parts, "."))
			if err != nil {
				return nil, err
			}
			q = parsed[0].Stmt.(*sql.Query)
		} else if len(c.Columns) > 0 {
			return nil, pgerror.New(pgerror.SyntaxError, "COPY (query) takes no column list")
		}
		st, err := s.planQuery(q, nil)
		if err != nil {
			return nil, err
		}
		cols, run = st.cols, st.exec
	}
	names := make([]string, len(cols))
	colTypes := make([]types.Type, len(cols))
	for i, col := range cols {
		names[i], colTypes[i] = col.Name, col.Type
	}
	opts, err := copyOptions(c, names)
	if err != nil {
		return nil, err
	}
	return &statement{exec: func(ctx context.Context, args []types.Value) (pgwire.Result, error) {
		res, err := run(ctx, args)
		if err != nil {
			return nil, err
		}
		return &copyOutResult{res: res, o: opts, enc: types.NewCopyEncoder(opts, colTypes), names: names}, nil
	}}, nil
}

func copyFileRefused(c *sql.Copy) error {
	var msg string
	switch {
	case c.Target == "program":
		msg = "must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program"
	case c.From:
		msg = "must be superuser or have privileges of the pg_read_server_files role to COPY from a file"
	default:
		msg = "must be superuser or have privileges of the pg_write_server_files role to COPY to a file"
	}
	return pgerror.New(pgerror.InsufficientPrivilege, "%s", msg).
		WithHint("Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone.")
}

// copyOptions validates a COPY's options as PostgreSQL's
// ProcessCopyOptions does; names are the COPY's columns (FORCE_ lists).
func copyOptions(c *sql.Copy, names []string) (types.CopyOptions, error) {
	syntax := func(format string, args ...any) error { return pgerror.New(pgerror.SyntaxError, format, args...) }
	conflict := func(name string) error { return syntax("conflicting or redundant options: %s", name) }
	seen := map[string]bool{}
	var o types.CopyOptions
	var delim, null, quote, escape *string
	var forceQuote, forceNotNull, forceNull *sql.CopyOption
	for i := range c.Options {
		opt := &c.Options[i]
		if seen[opt.Name] {
			return o, conflict(opt.Name)
		}
		seen[opt.Name] = true
		switch opt.Name {
		case "format":
			switch strings.ToLower(opt.Value) {
			case "text":
				o.Format = types.CopyText
			case "csv":
				o.Format = types.CopyCSV
			case "binary":
				o.Format = types.CopyBinary
			default:
				return o, pgerror.New(pgerror.InvalidParameterValue, "COPY format \"%s\" not recognized", opt.Value)
			}
		case "header":
			if !opt.HasValue {
				o.Header = true
				break
			}
			switch strings.ToLower(opt.Value) {
			case "true", "on", "1", "t", "yes":
				o.Header = true
			case "false", "off", "0", "f", "no":
			case "match":
				if !c.From {
					return o, syntax("cannot use \"%s\" with HEADER in COPY TO", opt.Value)
				}
				o.Header, o.HeaderMatch = true, true
			default:
				return o, syntax("%s requires a Boolean value or \"match\"", opt.Name)
			}
		case "delimiter":
			delim = &opt.Value
		case "null":
			null = &opt.Value
		case "quote":
			quote = &opt.Value
		case "escape":
			escape = &opt.Value
		case "force_quote":
			forceQuote = opt
		case "force_not_null":
			forceNotNull = opt
		case "force_null":
			forceNull = opt
		case "encoding":
			if e := strings.ToLower(strings.ReplaceAll(opt.Value, "-", "")); e != "utf8" && e != "unicode" {
				return o, pgerror.NotSupported("COPY with ENCODING %q (fvsql speaks UTF8)", opt.Value)
			}
		case "freeze":
		case "oids":
			return o, pgerror.NotSupported("COPY WITH OIDS")
		default:
			return o, syntax("option \"%s\" not recognized", opt.Name)
		}
	}
	def := types.DefaultCopyOptions(o.Format)
	o.Delimiter, o.Null, o.Quote, o.Escape = def.Delimiter, def.Null, def.Quote, def.Escape
	if o.Format == types.CopyBinary {
		for _, n := range []string{"delimiter", "null", "header", "quote", "escape"} {
			if seen[n] {
				return o, syntax("cannot specify %s in BINARY mode", strings.ToUpper(n))
			}
		}
	}
	if delim != nil {
		if len(*delim) != 1 {
			return o, pgerror.NotSupported("COPY delimiter other than a single one-byte character")
		}
		d := (*delim)[0]
		if d == '\r' || d == '\n' {
			return o, pgerror.New(pgerror.InvalidParameterValue, "COPY delimiter cannot be newline or carriage return")
		}
		if o.Format == types.CopyText && strings.IndexByte(`\.abcdefghijklmnopqrstuvwxyz0123456789`, d) >= 0 {
			return o, pgerror.New(pgerror.InvalidParameterValue, "COPY delimiter cannot be \"%s\"", *delim)
		}
		o.Delimiter = d
	}
	if null != nil {
		if strings.ContainsAny(*null, "\r\n") {
			return o, pgerror.New(pgerror.InvalidParameterValue, "COPY null representation cannot use newline or carriage return")
		}
		o.Null = *null
	}
	csvOnly := func(name string, set bool) error {
		if set && o.Format != types.CopyCSV {
			return pgerror.NotSupported("COPY %s available only in CSV mode", name)
		}
		return nil
	}
	for _, e := range []struct {
		name string
		set  bool
	}{{"quote", quote != nil}, {"escape", escape != nil}, {"force quote", forceQuote != nil}, {"force not null", forceNotNull != nil}, {"force null", forceNull != nil}} {
		if err := csvOnly(e.name, e.set); err != nil {
			return o, err
		}
	}
	if quote != nil {
		if len(*quote) != 1 {
			return o, pgerror.NotSupported("COPY quote must be a single one-byte character")
		}
		o.Quote, o.Escape = (*quote)[0], (*quote)[0]
	}
	if escape != nil {
		if len(*escape) != 1 {
			return o, pgerror.NotSupported("COPY escape must be a single one-byte character")
		}
		o.Escape = (*escape)[0]
	}
	if o.Format == types.CopyCSV {
		if o.Delimiter == o.Quote {
			return o, pgerror.New(pgerror.InvalidParameterValue, "COPY delimiter and quote must be different")
		}
		if strings.IndexByte(o.Null, o.Delimiter) >= 0 {
			return o, pgerror.New(pgerror.InvalidParameterValue, "COPY delimiter character must not appear in the NULL specification")
		}
		if strings.IndexByte(o.Null, o.Quote) >= 0 {
			return o, pgerror.New(pgerror.InvalidParameterValue, "CSV quote character must not appear in the NULL specification")
		}
	}
	if forceQuote != nil && c.From {
		return o, pgerror.NotSupported("COPY FORCE_QUOTE cannot be used with COPY FROM")
	}
	if (forceNotNull != nil || forceNull != nil) && !c.From {
		return o, pgerror.NotSupported("COPY FORCE_NOT_NULL and FORCE_NULL cannot be used with COPY TO")
	}
	var err error
	if o.ForceQuote, err = copyColumnSet(forceQuote, names); err != nil {
		return o, err
	}
	if o.ForceNotNull, err = copyColumnSet(forceNotNull, names); err != nil {
		return o, err
	}
	if o.ForceNull, err = copyColumnSet(forceNull, names); err != nil {
		return o, err
	}
	return o, nil
}

// copyColumnSet marks the columns a FORCE_ option names (* all of them).
func copyColumnSet(opt *sql.CopyOption, names []string) ([]bool, error) {
	if opt == nil {
		return nil, nil
	}
	set := make([]bool, len(names))
	if opt.Star {
		for i := range set {
			set[i] = true
		}
		return set, nil
	}
	if opt.Columns == nil {
		return nil, pgerror.New(pgerror.SyntaxError, "argument to option \"%s\" must be a list of column names", opt.Name)
	}
	for _, n := range opt.Columns {
		found := false
		for i, name := range names {
			if name == n {
				set[i], found = true, true
			}
		}
		if !found {
			return nil, pgerror.New(pgerror.InvalidColumnReference, "%s column \"%s\" not referenced by COPY", strings.ToUpper(strings.ReplaceAll(opt.Name, "_", " ")), n)
		}
	}
	return set, nil
}

// copyOutResult encodes the rows of a query's (or a subscription's)
// result as COPY data: the header first, one CopyData per row, the binary
// trailer last (binary: the signature in the first row's message).
type copyOutResult struct {
	res   pgwire.Result
	o     types.CopyOptions
	enc   *types.CopyEncoder
	names []string
	state int // 0: header not sent; 1: rows; 2: done
	n     int64
}

func (r *copyOutResult) CopyOutFormat() (int16, int) {
	if r.o.Format == types.CopyBinary {
		return 1, len(r.names)
	}
	return 0, len(r.names)
}

func (r *copyOutResult) NextCopyData(ctx context.Context, buf []byte) ([]byte, error) {
	switch r.state {
	case 0:
		r.state = 1
		switch {
		case r.o.Format == types.CopyBinary:
			// The signature shares the first row's CopyData (or the
			// trailer's), as PostgreSQL sends it: psycopg parses each
			// message as one row after taking the signature off the first.
			buf = r.enc.AppendHeader(buf, r.names)
		case r.o.Header:
			return r.enc.AppendHeader(buf, r.names), nil
		}
	case 2:
		return buf, io.EOF
	}
	row, err := r.res.Next(ctx)
	if err == io.EOF {
		r.state = 2
		if r.o.Format == types.CopyBinary {
			return r.enc.AppendTrailer(buf), nil
		}
		return buf, io.EOF
	}
	if err != nil {
		return buf, err
	}
	r.n++
	return r.enc.AppendRow(buf, row)
}

func (r *copyOutResult) Next(context.Context) (types.Row, error) { return nil, io.EOF }
func (r *copyOutResult) Tag() string                             { return fmt.Sprintf("COPY %d", r.n) }
func (r *copyOutResult) Close()                                  { r.res.Close() }

func (r *copyOutResult) Notices() []string {
	if nr, ok := r.res.(pgwire.NoticeResult); ok {
		return nr.Notices()
	}
	return nil
}

var (
	_ pgwire.CopyOutResult = (*copyOutResult)(nil)
	_ pgwire.NoticeResult  = (*copyOutResult)(nil)
	_ pgwire.CopyInResult  = (*copyInResult)(nil)
)

// planCopyFrom checks the target of a COPY FROM STDIN as PlanInsert checks
// an INSERT's: a stream written by clients, its visible columns or the
// listed ones, each once.
func (s *session) planCopyFrom(c *sql.Copy) (*statement, error) {
	schema, name := "", c.Table
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		schema, name = name[:i], name[i+1:]
	}
	if schema != "" && schema != "public" {
		return nil, pgerror.New(pgerror.InsufficientPrivilege, "cannot copy into %s.%s", schema, name)
	}
	rel, err := s.srv.cat.Lookup("", name)
	if err != nil {
		return nil, err
	}
	if rel.Kind != catalog.Stream {
		return nil, pgerror.New(pgerror.WrongObjectType, "cannot copy to %s %q: only streams accept COPY FROM", rel.Kind, rel.Name)
	}
	if rel.SQL != "" {
		return nil, pgerror.New(pgerror.WrongObjectType, "cannot copy to stream %q: it is the output of a continuous query", rel.Name)
	}
	var target []int
	if len(c.Columns) == 0 {
		for i, col := range rel.Columns {
			if !col.Hidden {
				target = append(target, i)
			}
		}
	} else {
		seen := map[int]bool{}
		for _, n := range c.Columns {
			i := rel.ColumnIndex(n)
			if i < 0 || rel.Columns[i].Hidden {
				return nil, pgerror.New(pgerror.UndefinedColumn, "column %q of relation %q does not exist", n, rel.Name)
			}
			if seen[i] {
				return nil, pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", n)
			}
			seen[i] = true
			target = append(target, i)
		}
	}
	names := make([]string, len(target))
	colTypes := make([]types.Type, len(target))
	for i, t := range target {
		names[i], colTypes[i] = rel.Columns[t].Name, rel.Columns[t].Type
	}
	opts, err := copyOptions(c, names)
	if err != nil {
		return nil, err
	}
	return &statement{exec: func(ctx context.Context, _ []types.Value) (pgwire.Result, error) {
		return &copyInResult{s: s, rel: rel, target: target, names: names, types: colTypes, o: opts}, nil
	}}, nil
}

// copyInResult runs a COPY FROM STDIN.
type copyInResult struct {
	s      *session
	rel    *catalog.Relation
	target []int
	names  []string
	types  []types.Type
	o      types.CopyOptions
	n      int64
}

func (r *copyInResult) CopyInFormat() (int16, int) {
	if r.o.Format == types.CopyBinary {
		return 1, len(r.names)
	}
	return 0, len(r.names)
}

// CopyIn parses every row, type-checked, and writes them all in one Send,
// as INSERT … VALUES does: a bad row fails the COPY with nothing written.
// INSERT is atomic by writing only once everything is valid (the
// backends' Send is not a transaction), so the encoded rows are held until
// the end: a COPY holding more than --query-memory-mb of them fails with
// 53200 before writing anything.
func (r *copyInResult) CopyIn(ctx context.Context, in io.Reader) error {
	s := r.s.srv
	ctx, stop := r.s.withStatementTimeout(ctx)
	defer stop()
	rel := r.rel
	codec, err := codecFor(rel)
	if err != nil {
		return err
	}
	keyCols := make([]int, len(rel.Key))
	for i, k := range rel.Key {
		keyCols[i] = rel.ColumnIndex(k)
	}
	dec := types.NewCopyDecoder(in, r.o, rel.Name, r.names, r.types)
	var msgs []backends.Message
	var size int64
	limit := s.cfg.QueryMemoryBytes
	full := make(types.Row, len(rel.Columns))
	for {
		row, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		for i := range full {
			full[i] = types.NullValue
		}
		for i, t := range r.target {
			full[t] = row[i]
		}
		if err := checkNotNull(rel, full); err != nil {
			return pgerror.Flatten(err).WithWhere("%s", dec.Where())
		}
		payload := codec.Append(make([]byte, 0, 64), full)
		key := types.RecordKey(full, keyCols)
		msgs = append(msgs, backends.Message{Stream: rel.Topic, Key: key, Payload: payload})
		size += int64(len(payload)+len(key)) + 64
		if limit > 0 && size > limit {
			e := pgerror.New(pgerror.OutOfMemory, "out of memory")
			e.Detail = fmt.Sprintf("COPY FROM holds its rows until the last one is read, so that a bad row writes nothing; this one holds more than %d MB, the limit set by --query-memory-mb (FVSQL_QUERY_MEMORY_MB).", limit>>20)
			e.Hint = "Split the data into several COPY statements, or raise the limit."
			return e.WithWhere("%s", dec.Where())
		}
		if len(msgs)&1023 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	if w := r.s.writes(); w != nil && len(msgs) > 0 {
		if err := w.hold(rel, msgs, limit); err != nil {
			return err
		}
	} else if len(msgs) > 0 {
		st, err := s.backend(ctx, rel)
		if err != nil {
			return err
		}
		prod, err := st.Producer(ctx)
		if err != nil {
			return err
		}
		defer prod.Close()
		if err := prod.Send(ctx, msgs); err != nil {
			return err
		}
	}
	r.n = int64(len(msgs))
	return nil
}

func (r *copyInResult) Next(context.Context) (types.Row, error) { return nil, io.EOF }
func (r *copyInResult) Tag() string                             { return fmt.Sprintf("COPY %d", r.n) }
func (r *copyInResult) Close()                                  {}
