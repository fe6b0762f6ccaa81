package plan

import (
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/types"
)

// Node is a bounded query plan: plain data, a tree of sources and step
// chains. The planner builds it; RunBounded runs it.
type Node interface{ node() }

// Source reads a dataset the host resolves (a stream's data present at
// query start, a materialized view's state, a system relation).
type Source struct {
	Dataset string
	// Lookup, when set, holds values for a prefix of the dataset's key
	// columns (a pull query by key): datasets that can (KeyedDataset)
	// return just those rows instead of scanning.
	Lookup []*expr.Expr
}

// Values is constant rows (SELECT without FROM, VALUES lists).
type Values struct {
	Rows []types.Row
}

// Chain runs steps over its input. Expressions of its steps may use the
// chain's subqueries (expr.KSubquery with the index into Subqueries).
type Chain struct {
	Input      Node
	Steps      []Step
	Subqueries []Subquery
}

// Subquery is a plan an expression evaluates (scalar, EXISTS, IN).
// A correlated one reads the enclosing row (expr.KOuter); an
// uncorrelated one runs once per execution. Outer lists the columns of
// the enclosing row a correlated one reads, when the planner knows them
// all and the subquery calls no volatile function: rows equal in those
// columns get the same result, so it runs once per distinct combination
// of them rather than once per row.
type Subquery struct {
	Plan       Node
	Correlated bool
	Outer      []int
}

// UnionAll concatenates its inputs.
type UnionAll struct {
	Inputs []Node
}

func (*Source) node() {}

func (*Values) node() {}

func (*Chain) node() {}

func (*UnionAll) node() {}

// SetOp is INTERSECT or EXCEPT of two inputs of Width columns each, of
// the same types: two rows are the same when every column is equal or
// both are NULL (as PostgreSQL compares rows in set operations). Without
// All the result is the distinct left rows that the right input has
// (INTERSECT) or has not (EXCEPT); with All, a row the right input has n
// times is kept (INTERSECT ALL) or taken out (EXCEPT ALL) n times, in the
// left input's order.
type SetOp struct {
	Except      bool // INTERSECT when false
	All         bool
	Left, Right Node
	Width       int
}

func (*SetOp) node() {}

// FuncRows is a function in FROM whose arguments are computed when the
// query runs, once per execution, with the execution's parameters and
// session (FROM generate_series(1, $1), FROM
// string_to_array(current_setting('search_path'), ',')): the rows of
// set-returning function Set (an expr.SetFunc key) over Args, or, when Set
// is empty, the one-column row of the scalar expression Args[0]. The
// arguments read no row. Ordinality appends each row's 1-based number.
type FuncRows struct {
	Set        string
	Args       []*expr.Expr
	Ordinality bool
}

func (*FuncRows) node() {}

// Join joins two bounded inputs. Rows of the result are the left row's
// values followed by the right row's. Equi-join keys (LeftKeys[i] =
// RightKeys[i]) are matched through a hash table of the right input;
// On, when set, is evaluated over the joined row. Kind is "inner",
// "left", "right", "full" or "cross", or "semi" and "anti", whose rows
// are the left rows alone that have a partner (EXISTS), or have none
// (NOT EXISTS).
type Join struct {
	Kind        string
	Left, Right Node
	LeftKeys    []*expr.Expr // over left rows
	RightKeys   []*expr.Expr // over right rows
	On          *expr.Expr   // over joined rows, or nil
	LeftWidth   int
	RightWidth  int
}

func (*Join) node() {}

// Apply is a LATERAL subquery joined to the FROM items before it: Right
// runs for each row of Left, with that row as its outer row (its
// expr.KOuter references; Right.Outer lists the columns they read, for
// the memo of RunBounded), and each of its rows comes after the left
// row's values. On, when set, is evaluated over the joined row. Kind is
// "inner", or "left": a left row none of whose right rows passes On comes
// once, with NULLs for the right side's RightWidth columns.
type Apply struct {
	Kind       string
	Left       Node
	Right      Subquery
	On         *expr.Expr
	LeftWidth  int
	RightWidth int
}

func (*Apply) node() {}

// Recursive is a WITH RECURSIVE query: Anchor's rows, then Step's, run
// again and again, each run's WorkTable (the one of this ID) the rows the
// run before it made, until a run makes none. Without All a row made
// before is left out, and is not worked on again (UNION). IDs are unique
// within a query.
type Recursive struct {
	Anchor, Step Node
	All          bool
	ID           int64
}

// WorkTable is the rows the last run of the Recursive query of its ID
// made, read in that query's Step.
type WorkTable struct {
	ID int64
}

func (*Recursive) node() {}

func (*WorkTable) node() {}
