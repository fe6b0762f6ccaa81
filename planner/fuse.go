package planner

import (
	"slices"

	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/plan"
)

// fuseStages is a lowering rule over a planned topology: it merges a stage
// into the stage before it where the re-keying between them would move no
// row that has to meet another. The stage before (a join's) writes an
// internal topic keyed by what the stage after it needs together (an
// aggregate's GROUP BY, a top-N's PARTITION BY); when every row of one
// such key already sits in one input partition of the stage before (the
// key holds the join key, by a column equal to it), that topic is a
// round trip through Kafka, JSON and the idle-timeout of watermarks that
// changes nothing. The merged stage runs both stages' steps per input
// partition, with several stateful operators (plan.Stage), and the topic
// is gone.
//
// A stage is merged into the one writing its input when:
//   - it reads that one internal stream, which only that stage writes and
//     only it reads, with no metadata columns, bridge or upsert;
//   - its stateful steps are a group aggregate or a top-N, which keep no
//     watermark-driven state (a window would close by the partition's
//     watermark, not the minimum over all of them);
//   - it sets no data-derived watermark and gets no seed marker;
//   - colocated says the writer's rows agreeing on the topic's key are
//     in one of its input partitions.
//
// It runs until nothing more merges; stages stay in the order they were
// planned.
func fuseStages(t *plan.Topology) {
	for fuseOnce(t) {
	}
}

// fuseOnce merges one stage into the one before it, reporting whether it
// found one to merge.
func fuseOnce(t *plan.Topology) bool {
	for bi := range t.Stages {
		b := &t.Stages[bi]
		if len(b.Inputs) != 1 || b.Watermark != nil || t.Seeded(b) || !fusibleSteps(b.Steps) {
			continue
		}
		ri := slices.IndexFunc(t.Internal, func(d plan.Stream) bool { return d.Name == b.Inputs[0] })
		if ri < 0 {
			continue
		}
		r := &t.Internal[ri]
		if r.Meta || r.Upsert || bridged(t, r.Name) {
			continue
		}
		writers, readers := stagesWriting(t, r.Name), stagesReading(t, r.Name)
		if len(writers) != 1 || len(readers) != 1 || readers[0] != bi {
			continue
		}
		ai := writers[0]
		a := &t.Stages[ai]
		key := a.OutputKey
		if len(key) == 0 {
			key = r.Key
		}
		clauses := colocated(t, ai)
		if len(key) == 0 || clauses == nil || !covers(clauses, key) {
			continue
		}
		a.Steps = append(a.Steps, b.Steps...)
		a.Output, a.OutputKey, a.Changes, a.SourceBase = b.Output, b.OutputKey, b.Changes, b.SourceBase
		t.Stages = slices.Delete(t.Stages, bi, bi+1)
		t.Internal = slices.Delete(t.Internal, ri, ri+1)
		return true
	}
	return false
}

// fusibleSteps says whether a stage's steps can run after another stage's
// in its partitions: their stateful ones keep no watermark-driven state.
func fusibleSteps(steps []plan.Step) bool {
	for _, s := range steps {
		if !s.Stateless() && s.Op != plan.OpGroupAggregate && s.Op != plan.OpTopN {
			return false
		}
	}
	return true
}

func bridged(t *plan.Topology, name string) bool {
	for _, bs := range [][]plan.Bridge{t.Ingest, t.Sinks} {
		if slices.ContainsFunc(bs, func(b plan.Bridge) bool { return b.Internal == name }) {
			return true
		}
	}
	return false
}

func stagesWriting(t *plan.Topology, name string) []int {
	var out []int
	for i, s := range t.Stages {
		if s.Output == name {
			out = append(out, i)
		}
	}
	return out
}

func stagesReading(t *plan.Topology, name string) []int {
	var out []int
	for i, s := range t.Stages {
		if slices.Contains(s.Inputs, name) {
			out = append(out, i)
		}
	}
	return out
}

// colocated says which columns of stage ai's output rows keep rows
// together in its input partitions, as clauses: a set of columns holding
// at least one column of every clause takes, wherever its values agree,
// rows from one input partition (covers). nil: nothing is known.
//
// Only a hash join's stage is known: it reads a join topic keyed by the
// join key's columns, which each side's stage computes, in the row it
// writes, as a copy of one of that side's columns. On every joined row
// that column holds the key's value, so a left column equal to the i-th
// key is a clause of its own in a LEFT, semi or anti join, a right column
// in a RIGHT join, either (one clause of both) in an inner join, and in a
// FULL join a left and a right one (two clauses: a row padded on one side
// has its key on the other). The steps after the join carry the clauses
// through filters and plain column references of projections.
func colocated(t *plan.Topology, ai int) [][]int {
	a := &t.Stages[ai]
	if len(a.Inputs) != 1 || len(a.Steps) == 0 || a.Steps[0].Op != plan.OpHashJoin || a.Steps[0].Join == nil {
		return nil
	}
	di := slices.IndexFunc(t.Internal, func(d plan.Stream) bool { return d.Name == a.Inputs[0] })
	if di < 0 {
		return nil
	}
	d := &t.Internal[di]
	spec := a.Steps[0].Join
	if len(d.Key) == 0 || !slices.Equal(spec.LeftKey, d.Key) || !slices.Equal(spec.RightKey, d.Key) {
		return nil
	}
	lw, rw := spec.LeftWidth, spec.RightWidth
	var sides [2][][]int // per side, per key: the join output columns equal to it
	for _, wi := range stagesWriting(t, d.Name) {
		w := &t.Stages[wi]
		side, eq := sideKeyCopies(w, d.Key)
		if side < 0 || sides[side] != nil {
			return nil
		}
		lo, hi := 1, 1+lw // the side's columns in the topic's rows
		if side == 1 {
			lo, hi = 1+lw, 1+lw+rw
		}
		cols := make([][]int, len(d.Key))
		for i, ps := range eq {
			for _, p := range ps {
				if p >= lo && p < hi {
					cols[i] = append(cols[i], p-1) // the join drops the side column
				}
			}
		}
		sides[side] = cols
	}
	if sides[0] == nil || sides[1] == nil {
		return nil
	}
	var clauses [][]int
	for i := range d.Key {
		switch spec.Type {
		case "inner":
			clauses = append(clauses, append(slices.Clone(sides[0][i]), sides[1][i]...))
		case "left", "semi", "anti":
			clauses = append(clauses, sides[0][i])
		case "right":
			clauses = append(clauses, sides[1][i])
		case "full":
			clauses = append(clauses, sides[0][i], sides[1][i])
		default:
			return nil
		}
	}
	for _, s := range a.Steps[1:] {
		switch s.Op {
		case plan.OpFilter:
		case plan.OpProject:
			clauses = projectClauses(clauses, s.Exprs)
		default:
			return nil
		}
		if clauses == nil {
			return nil
		}
	}
	return clauses
}

// sideKeyCopies reads the projection a join side's stage w ends with:
// which side it writes (its constant first column; -1: not known) and,
// for each key column of the topic, the other columns it writes that
// copy the same input column.
func sideKeyCopies(w *plan.Stage, key []int) (int, [][]int) {
	if len(w.Steps) == 0 || (len(w.OutputKey) > 0 && !slices.Equal(w.OutputKey, key)) {
		return -1, nil
	}
	last := w.Steps[len(w.Steps)-1]
	if last.Op != plan.OpProject || len(last.Exprs) == 0 {
		return -1, nil
	}
	first := last.Exprs[0]
	if first.Kind != expr.KConst || first.Val.IsNull() || (first.Val.I != 0 && first.Val.I != 1) {
		return -1, nil
	}
	eq := make([][]int, len(key))
	for i, k := range key {
		if k >= len(last.Exprs) || last.Exprs[k].Kind != expr.KCol {
			return -1, nil
		}
		ke := last.Exprs[k]
		for p, e := range last.Exprs {
			if p != k && e.Kind == expr.KCol && e.Col == ke.Col && e.Type == ke.Type {
				eq[i] = append(eq[i], p)
			}
		}
	}
	return int(first.Val.I), eq
}

// projectClauses carries clauses through a projection: a column stays
// where an output is a plain reference to it. A clause left without a
// column can no longer be covered: nil.
func projectClauses(clauses [][]int, exprs []*expr.Expr) [][]int {
	out := make([][]int, len(clauses))
	for i, c := range clauses {
		for j, e := range exprs {
			if e.Kind == expr.KCol && slices.Contains(c, e.Col) {
				out[i] = append(out[i], j)
			}
		}
		if len(out[i]) == 0 {
			return nil
		}
	}
	return out
}

// covers says whether the columns cols hold a column of every clause.
func covers(clauses [][]int, cols []int) bool {
	for _, c := range clauses {
		if !slices.ContainsFunc(c, func(x int) bool { return slices.Contains(cols, x) }) {
			return false
		}
	}
	return true
}
