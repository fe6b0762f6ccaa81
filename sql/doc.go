// Package sql is fvsql's SQL front end: it turns the PostgreSQL-dialect
// text that clients send (psql, pgx, pgjdbc, psycopg, BI tools) into the
// typed AST of ast.go. The entry points are Parse, which splits a
// simple-query string into statements, and ParseExpr for one expression;
// Format prints an AST back as canonical SQL, and Rewrite (rewrite.go)
// replaces an expression's nodes, copying only what changes, for the
// planner's rewrites of queries into others.
//
// # Pipeline
//
//  1. Tokenize (lexer.go). One pass of a PostgreSQL tokenizer over the
//     whole text: identifiers (folded to lower case unless quoted),
//     '…', E'…', U&'…', $tag$…$tag$, B'…' and X'…' constants, numbers,
//     $n parameters, operators, comments (nested /* */ too). Tokens keep
//     byte offsets into the original text, which every later error uses.
//  2. Split on ';' tokens, so quotes, comments and dollar-quotes are
//     already accounted for.
//  3. Recognise the statement by its leading keywords (stmt.go). A small
//     recursive-descent parser handles what TiDB's grammar lacks or gets
//     wrong: CREATE STREAM/MATERIALIZED VIEW/SINK, DROP, SHOW, SET/RESET,
//     transactions, DISCARD/DEALLOCATE, FLUSH, SUBSCRIBE, cursors
//     (DECLARE/FETCH/CLOSE), EXPLAIN, DESCRIBE and COPY (both option
//     syntaxes; a file or program parses so the server can refuse it).
//     Statements fvsql does not run (CREATE TABLE, UPDATE, DELETE, ALTER,
//     GRANT, …) become *Unsupported without further checking.
//  4. Normalize (normalize.go) the queries and INSERTs: rewrite the
//     PostgreSQL tokens into text TiDB's MySQL grammar parses with the
//     same meaning, keeping for each output token its source offset.
//  5. Parse with TiDB (tidb.go), in ANSI_QUOTES, PIPES_AS_CONCAT and
//     NO_BACKSLASH_ESCAPES mode, from a pool of parsers. A TiDB error's
//     offset is mapped back through the normalizer to the source token, so
//     errors read `syntax error at or near "FORM"` with PostgreSQL's
//     1-based character position in the text the client sent.
//  6. Convert (convert.go) TiDB's AST into sql's AST, undoing the
//     normalizer's rewrites.
//
// # Rewrites and synthetic names
//
// The normalizer and the converter share these conventions; none of the
// names can be written by a client with the same meaning, because the
// normalizer itself produces them from other syntax or quotes them:
//
//	$n                          ?  (the converter maps each ? back by its offset)
//	x::type, CAST(x AS type)    __fvsql_cast(x, 'type'), type checked by types.Parse
//	type 'text' (DATE '…')      __fvsql_cast('text', 'type')
//	X'beef'                     __fvsql_cast('\xbeef', 'bytea')
//	INTERVAL '4' SECOND         __fvsql_interval('4', 'SECOND') -> interval Literal
//	1e3, 2.5E-3                 __fvsql_num('1e3') -> exact numeric Literal
//	EXTRACT(f FROM x)           __fvsql_extract('f', x) -> FuncCall "extract"
//	agg(…) FILTER (WHERE c)     __fvsql_filter(agg(…), (c))
//	agg(…) FILTER (WHERE c) OVER w  __fvsql_filter(agg(…) OVER w, (c))
//	bool_and(…) OVER w, …       __fvsql_over("bool_and"(…), sum(0) OVER w): the
//	                            window on a carrier TiDB takes OVER after
//	f(*)                        f(__fvsql_star) -> FuncCall.Star
//	x [ASC|DESC] NULLS FIRST    __fvsql_nulls_first(x) [ASC|DESC] (and _last)
//	ROWS|RANGE|GROUPS … x PRECEDING  INTERVAL (x) MICROSECOND PRECEDING for any
//	                            offset but a number or $n (TiDB takes only
//	                            those, and MySQL's INTERVAL expr unit) ->
//	                            FrameBound.Offset x (also FOLLOWING)
//	TUMBLE/HOP/SESSION(…) in FROM  __fvsql_tvf_N; arguments parsed separately
//	[pg_catalog.]f(…) in FROM   the same for set-returning functions (TableFunc);
//	                            WITH ORDINALITY and AS t(a, b) are taken out too
//	LATERAL f(…)                f(…); LATERAL (subquery) stays (DerivedTable.Lateral)
//	ARRAY[a, b]                 __fvsql_array(a, b)
//	ARRAY(subquery)             __fvsql_array_sub((subquery))
//	x[i], x[lo:hi], x[:hi]      __fvsql_subscript(x, i), __fvsql_slice(x, lo, hi),
//	                            an omitted bound written __fvsql_omitted
//	x op ANY|SOME|ALL (array)   x op __fvsql_any(array) / __fvsql_all(array), for
//	                            comparisons, LIKE, ILIKE and ~ (the subquery form
//	                            stays TiDB's: = ANY is IN, <> ALL is NOT IN, other
//	                            operators become Quantified)
//	FULL [OUTER] JOIN           STRAIGHT_JOIN -> Join{Kind: "full"}
//	a ~ b, a !~ b               a REGEXP b, a NOT REGEXP b
//	a ~* b, a !~* b             a [NOT] REGEXP BINARY b (BINARY marks case-insensitive)
//	a IS NOT DISTINCT FROM b    a <=> b
//	a IS DISTINCT FROM b        a <=> BINARY b
//	a ~~ b, a ~~* b             LIKE, ILIKE
//	x ISNULL, IS UNKNOWN        IS NULL
//	x AT TIME ZONE z            timezone(z, x)
//	LIMIT/OFFSET/FETCH FIRST    LIMIT n OFFSET m in TiDB's order; OFFSET alone
//	                            uses LIMIT 18446744073709551615, read back as none
//	EMIT CHANGES / ON WINDOW CLOSE  stripped into Query.Emit
//	a || b with + - * / % ^ in an operand  the operand is parenthesized
//	current_user, user, …       current_user() … (SQL-value functions)
//	concat(…)                   pg_catalog.concat(…) (TiDB turns || into concat)
//	f(a) WITHIN GROUP (ORDER BY k)  __fvsql_withingroup("f"(a), k): an ordered-set
//	                            aggregate's call (FuncCall.WithinGroup)
//	stddev, variance            "stddev", "variance" (PostgreSQL's meaning, not
//	                            MySQL's); before OVER stddev_samp, var_samp
//	key, lag, rank, partition…  "key", … when TiDB reserves a word PostgreSQL
//	                            does not and it is not used as syntax there
//	COLLATE name                dropped (fvsql compares by code point)
//	GROUP BY ROLLUP (…), CUBE (…), GROUPING SETS (…)  __fvsql_rollup(…),
//	                            __fvsql_cube(…), __fvsql_grouping_sets(…), an empty
//	                            set () __fvsql_empty_set(): a GroupingSets node
//	WITH x AS (…) SELECT …      CTEs inlined as derived tables
//	x -> y, x ->> y, x #> y, x #>> y, x @> y, x <@ y, x ? y, x ?| y,
//	x ?& y, x #- y              __fvsql_jsonop_get(x, y), …: a Binary
//	WITH RECURSIVE t AS (a UNION [ALL] s)
//	                            a Recursive query (anchor a, step s); s
//	                            reads t as a WorkTable
//
// TiDB-only syntax is refused rather than silently reinterpreted:
// backticks, # and && operators, @variables, x 'alias', LIMIT a, b,
// BINARY, :=, and MySQL-reserved words used as keywords (DIV, MOD, XOR,
// REGEXP, STRAIGHT_JOIN …) which become quoted identifiers.
//
// # Known limits
//
//   - Multidimensional arrays (ARRAY[ARRAY[…]]), JSON operators other
//     than -> ->> #> #>> (@>, ?, …),
//     SIMILAR TO, NATURAL JOIN,
//     VALUES as a query, DEFAULT in VALUES,
//     FOR UPDATE and INSERT … ON CONFLICT or RETURNING give 0A000
//     (FeatureNotSupported).
//   - SELECT DISTINCT ON (keys) becomes a first select item
//     __fvsql_distinct_on(keys), which the converter takes back out
//     into Select.DistinctOn.
//   - A window frame's offset is a number literal and a frame has no
//     EXCLUDE clause: TiDB's grammar makes `$1 PRECEDING` and EXCLUDE
//     syntax errors (42601).
//   - Operator precedence follows TiDB except where rewritten: the
//     pattern operators (~, LIKE, ILIKE) sit at comparison level, as do
//     & | << >> in MySQL's order, and IS [NOT] DISTINCT FROM binds like =.
//     The pattern of LIKE/ILIKE/~ must be a simple operand
//     (a LIKE b + 1 is a syntax error; a LIKE '%' || b is fine).
//   - CROSS JOIN prints as a comma join (TiDB does not tell them apart);
//     a JOIN without ON is accepted as a cross join.
//   - AT TIME ZONE takes a single-token zone; LIMIT takes a constant or
//     a parameter.
//   - Unsupported statements are not checked for syntax.
//   - Positions of errors found after TiDB (e.g. an unsupported construct
//     met by the converter) point at the start of the statement.
package sql
