// Package planner turns the typed AST of package sql into plans: bounded
// queries become plan.Node trees of sources and step chains; INSERT
// becomes an InsertPlan; CREATE STREAM becomes a catalog relation;
// continuous queries (CREATE … AS SELECT) become an plan.Topology of
// stages. Every error a user can make — unknown relations and columns,
// type mismatches, misplaced aggregates, unsupported constructs — is found
// here, with its SQLSTATE, before anything runs.
//
// Two deliberate exceptions to "every error before anything runs": a
// subquery that uses something not supported yet (0A000) becomes an
// expression failing with that error when it is evaluated, so that
// clients' catalog queries about objects fvsql never has (psql's \d asks
// for publications with string_agg over a LATERAL generate_series) run;
// and the value of a set-returning function is computed while planning
// when its arguments are constants (arrays.go).
//
// Catalog functions that read the catalog of the server running the query
// (pg_get_viewdef) are planned as lookups into system relations, and a
// constant name cast to regclass, regnamespace or regrole is looked up
// while planning.
//
// WITH RECURSIVE is a plan.Recursive node in bounded queries (its step
// reads a plan.WorkTable; recursive.go), and 0A000 in continuous ones.
//
// Window functions of a bounded SELECT become window steps, one per
// distinct OVER clause, between the aggregation and the select list
// (window.go). In a view the same step runs as an overWindow operator
// behind a re-keying by the PARTITION BY values (overwindow.go), unless
// the query is a top-N (stateful.go) or aggregates over whole partitions
// or running over a stream (windowagg.go); the functions of several OVER
// clauses are layers of hidden views, one clause each. In a stream a
// window function is refused at CREATE with 0A000.
//
// A continuous aggregation or top-N is recognised by its shape
// (stateful.go: one stateful step over one stream) and cut into stages
// (continuous.go): GROUP BY expressions are computed before the rows are
// re-keyed, HAVING goes into the aggregate step (it decides which groups
// show), SELECT DISTINCT becomes a GROUP BY of the whole row, and keys the
// select list leaves out become hidden view columns. Into a stream, a
// GROUP BY without aggregates (DISTINCT's) emits each group's row once,
// when its first row comes (plan.Step.Once: over rows that only come, a
// distinct row is final when first seen); over any FROM clause but one
// stream or a window's rows, the rows are a hidden stream first
// (distinctAsSubquery). A stream's top-N must be final: partitioned by an
// event time (a window's, plan.OpFinalTopN) or ordered by one first,
// ascending (firstInTime, plan.OpFirstN). A stream's window functions
// run in event time (planWindowStream, plan.OpOverTime): ordered by the
// event time first, ascending, over frames that end at the current row
// or before it, each row comes out once, when the watermark passes it
// (operators.CheckOverTime refuses what would need later rows). A view over another
// view reads that view's table as a changelog (inputOf: changelogInput),
// starting with a changelog step that makes its upserts into signed rows;
// only views of rows, joins and aggregates that can take a row back out
// (operators.Retracts) accept one, and every other continuous query over
// a view is refused with 0A000 (streamInput). A view over a join (streamjoin.go, jointree.go) is a
// tree of regular hash joins that keep every row, with signed output, so
// that outer joins' NULL-padded rows can leave; its inputs are streams
// or views (read as their changes), and a join below another feeds it
// signed rows; an aggregate over it re-keys the joined rows from the top
// join's stage, unless its key holds the join key: then the lowering rule
// fuseStages (fuse.go), run on every planned topology, merges the two
// stages, and the aggregate runs after the join in its partitions. A view's EXISTS, NOT EXISTS and IN (SELECT …) conjuncts
// become semi and anti joins in that tree (semijoin.go). A subquery in a
// view's FROM clause is a hidden view inside the pipeline (nest.go): it
// is planned on its own, its stages go first, and the query reads its
// table as any view's. A subquery in a stream's FROM clause, and a WITH
// query a window reads, is a hidden stream instead, planned as the stream
// it would be on its own; a window or join over it takes the watermark
// its writer sends, less the lag writerLag knows for its time column
// (upstreamWatermarks). A join of joins in a stream (a JOIN b ON … JOIN
// c ON …) joins two inputs at a time: each join below the top is a hidden
// stream of its joined rows, whose columns keep their qualifiers
// (hideJoin). ORDER BY … LIMIT over an aggregation or a join
// and a top-N over a join of expressions are rewritten into such
// subqueries (a top-N over a join of columns reads the join's rows
// directly: planJoinTopN), and so is a union (a
// hidden stream: union.go; with any branch more than a stream's rows, a
// union of hidden views' changes: unionview.go), INTERSECT and EXCEPT (a grouping of the
// union of both sides, each row counted by side: union.go), a scalar
// subquery that is one aggregate, of its own or correlated by equalities
// (a hidden view LEFT JOINed to the rows: scalarsub.go), an aggregate
// over whole partitions (agg OVER (PARTITION BY …): a hidden grouped view
// LEFT JOINed on the keys) or running over a stream (OVER (… ORDER BY x):
// the stream joined with itself up to each row, grouped by the row's
// record, windowagg.go), window functions over a join or a grouped
// query in the same SELECT (the join or the grouping below, the windows
// over its rows: windowsOverQuery, overwindow.go), a stream's rows with LATERAL
// functions of them (a hidden stream: lateral.go) and SELECT DISTINCT ON
// (a ranking: distincton.go, bounded queries too). TUMBLE and HOP over a
// view, in a view, read a subquery of the view's rows with their windows
// (date_bin, and generate_series for HOP: windowview.go); SESSION over a
// view reads one with its sessions numbered by window functions
// (sessionOverView). A query over a window that groups by window_start
// or window_end alone groups by both (windowGroupBy), as a stream's
// window aggregation does. A bounded
// SESSION is a sessionAssign step after WHERE (select.go: buildSession).
// A derived table's column list, (q) AS x(a, b), is a subquery that names
// q's columns anew in a continuous query (aliascols.go), and renames the
// columns in place in a bounded one (buildTable). A comma FROM list
// becomes the JOIN … ON it means (fromwhere.go). CREATE STREAM … EMIT
// CHANGES is a view's pipeline with its changes as the stream. These
// rewrites work on the AST (sql.Rewrite replaces its nodes), before the
// shapes above are recognised.
//
// GROUP BY ROLLUP, CUBE and GROUPING SETS are rewritten, for bounded
// queries and views alike, as the UNION ALL of one grouping per set
// (groupingsets.go) before anything else plans the query.
//
// User functions (userfunc.go): a wasm function's call is an expr.KUser
// node over its arguments cast to its signature, a sql function's body
// is inlined with the arguments in place of its parameters. A function
// in FROM that reads the items before it (LATERAL, lateral.go) is a
// lateral step over their rows, in bounded queries and in streams; in a
// continuous query every function in FROM is, even one that reads none
// of them. A LATERAL subquery (lateralsub.go) correlated by equalities
// is rewritten into a join with the subquery's rows by those equalities'
// expressions (lateralRewrite), in bounded and continuous queries, and
// one that reads them otherwise is the same join over its domain, the
// distinct values of the columns it reads (lateralDomain); a bounded
// query runs any other as a plan.Apply, per row of the items before it,
// and a continuous query refuses it.
//
// Plans are plain data without goroutines. Name resolution works on
// scopes (the columns visible at a point of the query, with their table
// qualifiers); expression typing is package expr's.
package planner
