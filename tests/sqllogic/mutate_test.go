package sqllogic_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/fvsql/fvsql/tests/sqllogic"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

const (
	// mutationSeedEnv varies the mutations (default defaultMutationSeed);
	// mutationCountEnv their number (default defaultMutationCount).
	mutationSeedEnv  = "FVSQL_MUTATION_SEED"
	mutationCountEnv = "FVSQL_MUTATION_COUNT"
	// mutationVerboseEnv=1 logs every mutant and its outcome.
	mutationVerboseEnv = "FVSQL_MUTATION_VERBOSE"

	defaultMutationSeed  = 16
	defaultMutationCount = 700

	// mutantTimeout bounds each statement; a statement still running then
	// is cancelled (CancelRequest), and one that does not end within
	// cancelGrace more has hung.
	mutantTimeout = 10 * time.Second
	// setupTimeout bounds a setup statement, one of the file's own: a
	// FLUSH there waits for every pipeline the run has made, and under
	// CI's load may take longer than a mutant may, without a fault.
	setupTimeout = time.Minute
	cancelGrace  = 5 * time.Second
	// minimizeBudget bounds the statements run to minimize one failure.
	minimizeBudget = 150
)

// TestSQLMutations runs seeded random mutations of the SQL logic suite's
// statements against one fvsql server (embedded broker) and checks, for
// every statement: the server does not crash or log a panic, the statement
// answers within mutantTimeout, and an error carries a 5-character
// SQLSTATE that is not XX000 (internal error: a bug, whatever the input).
//
// The statements are the statement and query records of testdata/*.slt
// active on the embedded broker, but those that need Redis (${redis}) and
// those that SUBSCRIBE (a subscription waits for rows by design; FETCH of
// one too). For each file, in name order, on a new connection: the file's
// setup (its "statement ok" records that create a stream with columns or
// insert: no pipelines) runs unmutated, then the file's share of the
// mutants (in proportion to its statements), each made of one statement of
// the file by one to three mutations (see sqllogic.Mutator). After a
// mutant that succeeded, what it created (pipelines included: CREATE … AS
// is mutated too) is dropped at once, and the setup restored if it dropped
// part of it, so the server never holds more than one mutant's objects;
// at the end of the file everything it created is dropped.
//
// A failure names the seed to reproduce it with
// (FVSQL_MUTATION_SEED=n go test -run 'TestSQLMutations/<file>'
// ./tests/sqllogic: each file's mutants depend on the seed and the file's
// name only), the statement, the mutations, and, for XX000 and broken
// connections, the smallest statement found by removing tokens that fails
// the same way.
func TestSQLMutations(t *testing.T) {
	seed := uint64(defaultMutationSeed)
	if s := os.Getenv(mutationSeedEnv); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", mutationSeedEnv, s, err)
		}
		seed = n
	}
	count := defaultMutationCount
	if s := os.Getenv(mutationCountEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive count", mutationCountEnv, s)
		}
		count = n
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.slt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.slt files: %v", err)
	}
	var corpora []mutationCorpus
	total := 0
	for _, file := range files {
		c := loadMutationCorpus(t, file)
		if len(c.stmts) > 0 {
			corpora = append(corpora, c)
			total += len(c.stmts)
		}
	}

	// A short checkpoint interval makes FLUSH, which waits for a
	// checkpoint of every pipeline, quick.
	srv := fvsqltest.Start(t, fvsqltest.Config{Name: "mutations", Bin: serverBinary(t),
		Args: []string{"--stream-checkpoint-interval", "100ms"}})
	srv.Connect(t) // waits until the server accepts connections
	t.Logf("seed %d (%s), %d mutants over %d statements of %d files", seed, mutationSeedEnv, count, total, len(corpora))

	start := time.Now()
	stats := &mutationStats{codes: map[string]int{}}
	for _, c := range corpora {
		quota := max(1, (count*len(c.stmts)+total/2)/total)
		t.Run(c.name, func(t *testing.T) {
			r := &mutationRun{t: t, srv: srv, seed: seed, file: c.name, stats: stats}
			r.vars = map[string]string{"kafka": srv.KafkaBrokers()}
			r.run(c, quota)
		})
		if !srv.Running() {
			t.Fatalf("the server exited (seed %d); its log: %s", seed, srv.LogPath())
		}
	}
	panics := srv.LogLines(func(l string) bool { return strings.Contains(strings.ToLower(l), "panic") })
	if len(panics) > 0 {
		t.Errorf("the server's log mentions panics (seed %d):\n%s", seed, strings.Join(panics, "\n"))
	}
	t.Logf("seed %d: %d mutants in %s: %d ok, %d errors, %d failures; SQLSTATEs: %s",
		seed, stats.mutants, time.Since(start).Round(time.Millisecond), stats.ok, stats.errors, stats.failures, stats.topCodes(12))
}

// mutationCorpus is what one .slt file gives: its setup and the statements
// to mutate.
type mutationCorpus struct {
	name  string
	setup []string
	stmts []mutationSource
}

type mutationSource struct {
	line int
	sql  string
}

var (
	setupRE = regexp.MustCompile(`(?is)^\s*(CREATE\s|INSERT\s+INTO\s|FLUSH\b)`)
	// endlessRE: statements that may run until cancelled by design
	// (SUBSCRIBE; WITH RECURSIVE, whose mutants easily lose the
	// condition that ends them, as in PostgreSQL), which a mutant's 10 s
	// would call a hang
	endlessRE = regexp.MustCompile(`(?i)subscribe|\brecursive\b`)
	flushRE   = regexp.MustCompile(`(?i)^\s*FLUSH\s*;?\s*$`)
)

func loadMutationCorpus(t *testing.T, file string) mutationCorpus {
	t.Helper()
	records, err := parseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c := mutationCorpus{name: filepath.Base(file)}
	seen := map[string]bool{}
	flush := false
	for _, rec := range records {
		if rec.Kind != sqllogic.Statement && rec.Kind != sqllogic.Query || !rec.Active([]string{"embedded"}) {
			continue
		}
		if strings.Contains(rec.SQL, "${redis}") || endlessRE.MatchString(rec.SQL) {
			continue
		}
		if rec.Kind == sqllogic.Statement && !rec.ExpectError && setupRE.MatchString(rec.SQL) &&
			!strings.Contains(strings.TrimRight(strings.TrimSpace(rec.SQL), ";"), ";") {
			if flushRE.MatchString(rec.SQL) {
				flush = true // once, at the end
			} else {
				c.setup = append(c.setup, rec.SQL)
			}
		}
		// A statement the file repeats (FLUSH above all) is mutated as
		// often as any other.
		if !seen[rec.SQL] {
			seen[rec.SQL] = true
			c.stmts = append(c.stmts, mutationSource{line: rec.Line, sql: rec.SQL})
		}
	}
	if flush {
		c.setup = append(c.setup, "FLUSH")
	}
	return c
}

// mutationStats counts outcomes over all files.
type mutationStats struct {
	mutants, ok, errors, failures int
	codes                         map[string]int
}

func (s *mutationStats) topCodes(n int) string {
	type kv struct {
		code string
		n    int
	}
	var all []kv
	for c, k := range s.codes {
		all = append(all, kv{c, k})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].code < all[j].code })
	var parts []string
	for i, e := range all {
		if i == n {
			parts = append(parts, fmt.Sprintf("… %d more", len(all)-n))
			break
		}
		parts = append(parts, fmt.Sprintf("%s×%d", e.code, e.n))
	}
	return strings.Join(parts, " ")
}

// mutationRun runs one file's mutants on one connection.
type mutationRun struct {
	t     *testing.T
	srv   *fvsqltest.Process
	seed  uint64
	file  string
	vars  map[string]string
	stats *mutationStats

	setup   []string   // the file's setup statements
	creates [][]string // the relations each setup statement created
	verbose bool       // log every mutant

	conn *pgconn.PgConn
	base map[string]string // relation name -> kind, before the file
	// setupRels are the relations the file's setup made.
	setupRels map[string]string
	// reported are the failures reported so far, by signature, so that a
	// bug met by many mutants is minimized and reported once.
	reported map[string]int
}

// outcome is what one statement did.
type outcome struct {
	err     *pgconn.PgError // the server's error, if any
	other   error           // an error not from the server: the connection broke
	timeout bool            // did not answer within limit
	limit   time.Duration
	hung    bool // and did not end after the cancel either
	elapsed time.Duration
}

// failure describes a failing outcome, or "" when the outcome is fine.
func (o outcome) failure() string {
	switch {
	case o.hung:
		return fmt.Sprintf("hang: no answer within %s, nor within %s of a CancelRequest", o.limit, cancelGrace)
	case o.timeout:
		return fmt.Sprintf("no answer within %s (a CancelRequest then ended it: %s)", o.limit, describeOutcomeErr(o))
	case o.other != nil:
		return fmt.Sprintf("connection broken after %s: %v", o.elapsed.Round(time.Millisecond), o.other)
	case o.err != nil && (len(o.err.Code) != 5 || o.err.Code == "XX000"):
		return fmt.Sprintf("error with SQLSTATE %q: %s", o.err.Code, o.err.Message)
	}
	return ""
}

func describeOutcomeErr(o outcome) string {
	if o.err != nil {
		return o.err.Code + " " + o.err.Message
	}
	if o.other != nil {
		return o.other.Error()
	}
	return "no error"
}

// signature groups failures that are the same bug: the kind of failure
// and the error message without its numbers and quoted parts.
func (o outcome) signature() string {
	switch {
	case o.hung:
		return "hang"
	case o.timeout:
		return "timeout"
	case o.other != nil:
		return "broken"
	}
	msg := regexp.MustCompile(`"[^"]*"|'[^']*'|[0-9]+`).ReplaceAllString(o.err.Message, "_")
	return o.err.Code + " " + msg
}

func (r *mutationRun) run(c mutationCorpus, quota int) {
	t := r.t
	r.reported = map[string]int{}
	r.connect()
	defer func() {
		if r.conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = r.conn.Close(ctx)
		}
	}()
	r.base = r.relations()
	r.setup = c.setup
	r.verbose = os.Getenv(mutationVerboseEnv) == "1"
	r.runSetup()
	r.setupRels = r.relationsBeyond(r.base)
	h := fnv.New64a()
	h.Write([]byte(c.name))
	m := sqllogic.NewMutator(r.seed ^ h.Sum64())
	start := time.Now()
	for i := range quota {
		src := c.stmts[m.Intn(len(c.stmts))]
		mutant, how := m.Mutate(src.sql)
		for tries := 0; endlessRE.MatchString(mutant) && tries < 10; tries++ {
			mutant, how = m.Mutate(src.sql)
		}
		if endlessRE.MatchString(mutant) {
			continue
		}
		o := r.exec(mutant)
		r.stats.mutants++
		where := fmt.Sprintf("mutant %d of %s:%d (%s)", i, r.file, src.line, strings.Join(how, ", "))
		if r.verbose {
			res := "ok"
			if o.failure() != "" {
				res = "FAILED: " + o.failure()
			} else if o.err != nil {
				res = o.err.Code + " " + o.err.Message
			}
			t.Logf("%s, %s: %s\n    -> %s", where, o.elapsed.Round(time.Millisecond), abbreviate(mutant), res)
		}
		if !r.check(mutant, where, &src, o) {
			continue
		}
		if o.err == nil && o.other == nil && !o.timeout {
			r.restore()
		}
	}
	r.dropBeyond(r.base)
	t.Logf("%s: %d setup statements, %d mutants of %d statements in %s", r.file, len(c.setup), quota, len(c.stmts),
		time.Since(start).Round(time.Millisecond))
}

// check reports o when it fails (and counts a mutant's outcome); it
// returns false when the server is gone.
func (r *mutationRun) check(sql, where string, src *mutationSource, o outcome) bool {
	t := r.t
	switch {
	case src == nil:
	case o.err != nil:
		r.stats.errors++
		r.stats.codes[o.err.Code]++
	case o.other == nil && !o.timeout:
		r.stats.ok++
	}
	msg := o.failure()
	if o.other != nil || o.timeout {
		r.reconnect()
	}
	if msg == "" {
		return true
	}
	r.stats.failures++
	sig := o.signature()
	r.reported[sig]++
	if r.reported[sig] > 1 {
		t.Errorf("seed %d, %s: %s\n    SQL: %s\n    (the same failure as above, reported once in full)", r.seed, where, msg, abbreviate(sql))
		return r.srv.Running()
	}
	report := fmt.Sprintf("seed %d (%s=%d go test -run 'TestSQLMutations/%s' ./tests/sqllogic), %s: %s\n    SQL: %s",
		r.seed, mutationSeedEnv, r.seed, regexp.QuoteMeta(r.file), where, msg, abbreviate(sql))
	if src != nil {
		report += "\n    mutated from: " + abbreviate(src.sql)
	}
	if !r.srv.Running() {
		t.Errorf("%s\n    the server exited", report)
		return false
	}
	if !o.timeout && src != nil {
		min := sqllogic.Minimize(sql, func(s string) bool {
			again := r.exec(s)
			if again.other != nil || again.timeout {
				r.reconnect()
			}
			r.restore()
			return again.failure() != "" && again.signature() == sig
		}, minimizeBudget)
		report += "\n    minimal failing statement: " + abbreviate(min)
	}
	t.Errorf("%s", report)
	return r.srv.Running()
}

func abbreviate(s string) string {
	if len(s) <= 600 {
		return s
	}
	return fmt.Sprintf("%s … (%d bytes) … %s", s[:400], len(s), s[len(s)-100:])
}

// exec runs one SQL text (the simple query protocol, all its results
// read) within mutantTimeout, then rolls back a transaction it left open.
func (r *mutationRun) exec(sql string) outcome { return r.execWithin(sql, mutantTimeout) }

// execWithin is exec within limit.
func (r *mutationRun) execWithin(sql string, limit time.Duration) outcome {
	for k, v := range r.vars {
		sql = strings.ReplaceAll(sql, "${"+k+"}", v)
	}
	if r.conn == nil {
		r.connect()
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	_, err := sqllogic.PgConnExecutor{Conn: r.conn}.Exec(ctx, sql)
	o := outcome{elapsed: time.Since(start), limit: limit}
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		o.timeout = true
		o.hung = !errors.As(err, &pgErr) || r.conn.IsClosed()
		if errors.As(err, &pgErr) {
			o.err = pgErr
		} else {
			o.other = err
		}
	case errors.As(err, &pgErr):
		o.err = pgErr
	default:
		o.other = err
	}
	if !o.timeout && o.other == nil && r.conn.TxStatus() != 'I' {
		if res := r.execQuiet("ROLLBACK"); res != nil {
			r.t.Errorf("ROLLBACK after %q: %v", abbreviate(sql), res)
		}
	}
	return o
}

// execQuiet runs a housekeeping statement and returns its error.
func (r *mutationRun) execQuiet(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), mutantTimeout)
	defer cancel()
	_, err := sqllogic.PgConnExecutor{Conn: r.conn}.Exec(ctx, sql)
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			r.reconnect()
		}
	}
	return err
}

func (r *mutationRun) connect() {
	cfg, err := pgconn.ParseConfig(r.srv.DSN())
	if err != nil {
		r.t.Fatal(err)
	}
	// On a statement's timeout, send a CancelRequest and give the server
	// cancelGrace to end the statement before the socket is given up.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
	}
	ctx, cancel := context.WithTimeout(context.Background(), fvsqltest.StartTimeout)
	defer cancel()
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		r.t.Fatalf("connect to %s (seed %d): %v (server running: %v)", r.srv.Addr(), r.seed, err, r.srv.Running())
	}
	r.conn = conn
}

func (r *mutationRun) reconnect() {
	if r.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = r.conn.Close(ctx)
		cancel()
		r.conn = nil
	}
	if r.srv.Running() {
		r.connect()
	}
}

// relations lists the catalog's streams, materialized views and sinks.
func (r *mutationRun) relations() map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), mutantTimeout)
	defer cancel()
	res, err := sqllogic.PgConnExecutor{Conn: r.conn}.Exec(ctx,
		"SELECT name, kind FROM fvsql_catalog.streams WHERE kind IN ('stream', 'materialized view', 'sink')")
	if err != nil {
		r.t.Fatalf("listing relations (seed %d): %v", r.seed, err)
	}
	out := map[string]string{}
	for _, row := range res.Rows {
		out[*row[0]] = *row[1]
	}
	return out
}

func (r *mutationRun) relationsBeyond(base map[string]string) map[string]string {
	out := map[string]string{}
	for name, kind := range r.relations() {
		if _, ok := base[name]; !ok {
			out[name] = kind
		}
	}
	return out
}

// restore drops what a mutant created and runs again the setup
// statements that made what it dropped (and the INSERTs into it).
func (r *mutationRun) restore() {
	keep := map[string]string{}
	for k, v := range r.base {
		keep[k] = v
	}
	for k, v := range r.setupRels {
		keep[k] = v
	}
	r.dropBeyond(keep)
	now := r.relations()
	missing := map[string]bool{}
	for name := range r.setupRels {
		if _, ok := now[name]; !ok {
			missing[name] = true
		}
	}
	if len(missing) == 0 {
		return
	}
	again := 0
	for i, s := range r.setup {
		rerun := false
		for _, name := range r.creates[i] {
			rerun = rerun || missing[name]
		}
		if m := insertRE.FindStringSubmatch(s); m != nil {
			rerun = rerun || missing[strings.ToLower(strings.Trim(m[1], `"`))]
		}
		if rerun {
			r.runSetupStatement(s, "setup statement (again)")
			again++
		}
	}
	if again > 0 {
		r.runSetupStatement("FLUSH", "FLUSH after the setup statements run again")
	}
	// What could not be made again (its setup statement failed) is no
	// longer part of the setup.
	now = r.relations()
	for name := range missing {
		if _, ok := now[name]; !ok {
			delete(r.setupRels, name)
		}
	}
}

var insertRE = regexp.MustCompile(`(?is)^\s*INSERT\s+INTO\s+("[^"]+"|[a-z_0-9]+)`)

// runSetup runs the file's setup statements, noting what each creates.
func (r *mutationRun) runSetup() {
	r.creates = make([][]string, len(r.setup))
	before := r.relations()
	for i, s := range r.setup {
		r.runSetupStatement(s, "setup statement")
		after := r.relations()
		for name := range after {
			if _, ok := before[name]; !ok {
				r.creates[i] = append(r.creates[i], name)
			}
		}
		before = after
	}
}

// runSetupStatement runs a setup statement. It may fail (a stream that
// needs a service absent here, a name the file reuses), but like every
// statement, not with XX000.
func (r *mutationRun) runSetupStatement(s, what string) {
	o := r.execWithin(s, setupTimeout)
	if r.verbose {
		res := "ok"
		if o.err != nil {
			res = "failed: " + o.err.Code + " " + o.err.Message
		}
		r.t.Logf("%s, %s: %s\n    -> %s", what, o.elapsed.Round(time.Millisecond), abbreviate(s), res)
	}
	r.check(s, what, nil, o)
}

// dropBeyond drops every relation not in keep: pipelines first, as
// dependencies allow (a relation read by a pipeline, or belonging to one,
// is dropped in a later round).
func (r *mutationRun) dropBeyond(keep map[string]string) {
	for round := 0; ; round++ {
		extra := map[string]string{}
		for name, kind := range r.relations() {
			if _, ok := keep[name]; !ok {
				extra[name] = kind
			}
		}
		if len(extra) == 0 {
			return
		}
		if round == 10 {
			r.t.Fatalf("seed %d: could not drop %v after %d rounds", r.seed, slices.Sorted(maps.Keys(extra)), round)
		}
		for _, name := range slices.Sorted(maps.Keys(extra)) {
			stmt := "DROP " + strings.ToUpper(extra[name]) + " " + quoteIdent(name)
			o := r.exec(stmt)
			if msg := o.failure(); msg != "" {
				r.t.Errorf("seed %d, dropping what a mutant created: %s: %s", r.seed, stmt, msg)
			}
		}
	}
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func TestMutatorRoundTripAndSeeds(t *testing.T) {
	for _, s := range []string{
		"SELECT 1",
		"SELECT a.b, 'it''s', E'\\'', $1::int8, $$x$$ -- c\nFROM t /* c */ WHERE x >= 1.5e3;",
		"CREATE STREAM s (a BIGINT) WITH (partitions = 4)",
		"'unterminated",
		"",
	} {
		if got := sqllogic.Render(sqllogic.Tokenize(s)); got != s {
			t.Errorf("Render(Tokenize(%q)) = %q", s, got)
		}
	}
	a, b := sqllogic.NewMutator(7), sqllogic.NewMutator(7)
	for range 200 {
		x, _ := a.Mutate("SELECT sum(amount) FROM orders WHERE amount > 100 GROUP BY customer")
		y, _ := b.Mutate("SELECT sum(amount) FROM orders WHERE amount > 100 GROUP BY customer")
		if x != y {
			t.Fatalf("same seed, different mutants: %q and %q", x, y)
		}
	}
	got := sqllogic.Minimize("SELECT a, b, c FROM t WHERE boom", func(s string) bool { return strings.Contains(s, "boom") }, 100)
	if got != " boom" && got != "boom" {
		t.Errorf("Minimize kept %q", got)
	}
}
