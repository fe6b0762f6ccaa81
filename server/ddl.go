package server

import (
	"context"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// createStream creates the backend stream first and records the relation
// after, so that a crash in between leaves at most an unused topic, never
// a catalog entry without data behind it.
func (s *Server) createStream(ctx context.Context, cs *sql.CreateStream) (pgwire.Result, error) {
	rel, err := planner.PlanCreateStream(cs)
	if err != nil {
		return nil, err
	}
	if err := planner.TopicFits(rel, s.cfg.TopicPrefix); err != nil {
		return nil, err
	}
	s.ddl.Lock()
	defer s.ddl.Unlock()
	if _, ok := s.cat.Get(rel.Name); ok {
		if cs.IfNotExists {
			return &rowsResult{tag: "CREATE STREAM", notices: []string{"relation \"" + rel.Name + "\" already exists, skipping"}}, nil
		}
		return nil, pgerror.New(pgerror.DuplicateTable, "relation %q already exists", rel.Name)
	}
	st, err := s.backend(ctx, rel)
	if err != nil {
		return nil, err
	}
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: rel.Topic, Shards: rel.Partitions, Options: rel.Options}); err != nil {
		return nil, err
	}
	if err := s.catLog.publish(ctx, rel.Name, rel); err != nil {
		return nil, err
	}
	s.log.Info("stream created", "name", rel.Name, "backend", rel.BackendURI(), "topic", rel.Topic, "partitions", rel.Partitions)
	return tagOnly("CREATE STREAM"), nil
}

// drop removes relations: the catalog entry first (so nobody starts using
// it), then the backend data.
func (s *Server) drop(ctx context.Context, d *sql.Drop) (pgwire.Result, error) {
	want := map[sql.ObjectKind]catalog.Kind{
		sql.KindStream: catalog.Stream, sql.KindMaterializedView: catalog.MaterializedView, sql.KindSink: catalog.Sink,
	}
	kind, ok := want[d.Kind]
	if !ok {
		return nil, pgerror.NotSupported("DROP %s", strings.ToUpper(string(d.Kind)))
	}
	s.ddl.Lock()
	defer s.ddl.Unlock()
	res := tagOnly("DROP " + strings.ToUpper(string(d.Kind)))
	for _, name := range d.Names {
		rel, ok := s.cat.Get(name)
		if !ok {
			if d.IfExists {
				res.notices = append(res.notices, string(d.Kind)+" \""+name+"\" does not exist, skipping")
				continue
			}
			return nil, pgerror.New(pgerror.UndefinedTable, "%s %q does not exist", d.Kind, name)
		}
		if rel.Kind != kind {
			return nil, pgerror.New(pgerror.WrongObjectType, "%q is a %s, not a %s", name, rel.Kind, d.Kind).
				WithHint("Use DROP %s to remove a %s.", strings.ToUpper(string(rel.Kind)), rel.Kind)
		}
		if deps := s.dependents(name); len(deps) > 0 {
			return nil, pgerror.New(pgerror.DependentObjectsStillExist, "cannot drop %s %q because pipeline %q reads it", d.Kind, name, deps[0]).
				WithHint("Drop %s first.", strings.Join(deps, ", "))
		}
		if rel.Options["pipeline"] != "" && rel.Options["pipeline"] != rel.Name {
			if _, ok := s.cat.Get(rel.Options["pipeline"]); ok {
				return nil, pgerror.New(pgerror.DependentObjectsStillExist, "cannot drop %q: it belongs to pipeline %q, and goes with it", name, rel.Options["pipeline"])
			}
		}
		if err := s.catLog.publish(ctx, name, nil); err != nil {
			return nil, err
		}
		if len(rel.Plan) > 0 {
			s.dropPipeline(ctx, rel)
		}
		if rel.Kind == catalog.Sink {
			continue // a sink's target belongs to its readers: it stays
		}
		if st, err := s.backend(ctx, rel); err == nil {
			if err := st.DropStream(ctx, rel.Topic); err != nil {
				s.log.Warn("dropping stream data failed; the relation is gone, its topic remains", "name", name, "backend", rel.BackendURI(), "err", err)
			}
		}
	}
	return res, nil
}

// planShow answers SHOW.
func (s *session) planShow(sh *sql.Show) (*statement, error) {
	list := func(kind catalog.Kind) *statement {
		return rowsStatement(append(textCols("name", "topic"), pgwire.Column{Name: "partitions", Type: types.Int4},
			pgwire.Column{Name: "key", Type: types.Text}, pgwire.Column{Name: "format", Type: types.Text},
			pgwire.Column{Name: "backend", Type: types.Text}),
			func(context.Context) ([]types.Row, error) {
				var rows []types.Row
				for _, r := range s.srv.cat.List(kind) {
					key := types.NullValue
					if len(r.Key) > 0 {
						key = types.NewText(strings.Join(r.Key, ","))
					}
					rows = append(rows, types.Row{types.NewText(r.Name), types.NewText(r.Topic), types.NewInt(types.Int4, int64(r.Partitions)),
						key, types.NewText(r.Format), types.NewText(r.BackendURI())})
				}
				return rows, nil
			})
	}
	switch sh.What {
	case "streams", "tables":
		return list(catalog.Stream), nil
	case "materialized views":
		return list(catalog.MaterializedView), nil
	case "sinks":
		return list(catalog.Sink), nil
	case "pipelines":
		cols := make([]pgwire.Column, len(pipelineColumns))
		for i, c := range pipelineColumns {
			cols[i] = pgwire.Column{Name: c.Name, Type: c.Type}
		}
		return rowsStatement(cols, func(ctx context.Context) ([]types.Row, error) { return s.srv.pipelineRows(ctx), nil }), nil
	case "functions":
		return rowsStatement(functionColumns, func(context.Context) ([]types.Row, error) { return s.srv.functionRows(), nil }), nil
	case "all":
		return rowsStatement(textCols("name", "setting"), func(context.Context) ([]types.Row, error) {
			var rows []types.Row
			for _, k := range sortedSettings(s.settings) {
				rows = append(rows, types.Row{types.NewText(displayName(k)), types.NewText(s.settings[k])})
			}
			return rows, nil
		}), nil
	}
	if _, err := s.setting(sh.What); err != nil {
		return nil, err
	}
	return rowsStatement(textCols(sh.What), func(context.Context) ([]types.Row, error) {
		v, err := s.setting(sh.What)
		return []types.Row{{types.NewText(v)}}, err
	}), nil
}

// planDescribe lists a relation's columns.
func (s *session) planDescribe(d *sql.Describe) (*statement, error) {
	rel, err := s.srv.cat.Lookup("", d.Name)
	if err != nil {
		return nil, err
	}
	cols := append(textCols("column", "type"), pgwire.Column{Name: "nullable", Type: types.Bool}, pgwire.Column{Name: "key", Type: types.Bool},
		pgwire.Column{Name: "watermark", Type: types.Text})
	return rowsStatement(cols, func(context.Context) ([]types.Row, error) {
		var rows []types.Row
		for _, c := range rel.Columns {
			isKey := false
			for _, k := range rel.Key {
				isKey = isKey || k == c.Name
			}
			wm := types.NullValue
			if rel.Watermark != nil && rel.Watermark.Column == c.Name {
				wm = types.NewText(c.Name + " - " + types.NewInterval(types.IntervalValue{Micros: rel.Watermark.Delay}).Text())
			}
			rows = append(rows, types.Row{types.NewText(c.Name), types.NewText(c.Type.String()), types.NewBool(!c.NotNull), types.NewBool(isKey), wm})
		}
		// A watermark on the record timestamp (a metadata column, not
		// listed above) gets its row too, so that DESCRIBE shows it.
		if w := rel.Watermark; w != nil && rel.HasMeta() && rel.ColumnIndex(w.Column) < 0 {
			for _, c := range catalog.MetaColumns {
				if c.Name == w.Column {
					wm := types.NewText(c.Name + " - " + types.NewInterval(types.IntervalValue{Micros: w.Delay}).Text())
					rows = append(rows, types.Row{types.NewText(c.Name), types.NewText(c.Type.String()), types.NewBool(true), types.NewBool(false), wm})
				}
			}
		}
		return rows, nil
	}), nil
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
