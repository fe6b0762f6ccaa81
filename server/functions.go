package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
	"github.com/fvsql/fvsql/udf"
)

// functions runs the catalog's user functions in this process: it is
// the expr.UserFuncs of pipelines and bounded queries. A wasm function's
// module is compiled on first use, once per module, export and
// signature; the version a replacement or a drop retires is closed after
// retireAfter, once every pipeline worker has moved past it (each looks
// its functions up again at its next epoch).
type functions struct {
	s  *Server
	rt *udf.Runtime

	mu       sync.Mutex
	compiled map[string]*udf.Function // by compileKey
	closed   bool
}

// retireAfter is how long a replaced or dropped version stays callable.
const retireAfter = 2 * time.Minute

func newFunctions(s *Server, limits udf.Limits) (*functions, error) {
	rt, err := udf.NewRuntime(limits)
	if err != nil {
		return nil, err
	}
	return &functions{s: s, rt: rt, compiled: map[string]*udf.Function{}}, nil
}

func (f *functions) close() {
	f.mu.Lock()
	f.closed = true
	for _, c := range f.compiled {
		c.Close()
	}
	f.compiled = nil
	f.mu.Unlock()
	f.rt.Close()
}

// compileKey names what a compiled function depends on.
func compileKey(fn *catalog.Function) string {
	return fn.Module + "/" + fn.Export + "/" + fn.Signature() + "/" + fn.Result()
}

func signatureOf(fn *catalog.Function) udf.Signature {
	sig := udf.Signature{Name: fn.Name, Args: fn.ArgTypes(), Ret: fn.Ret}
	for _, c := range fn.Table {
		sig.Table = append(sig.Table, udf.Column{Name: c.Name, Type: c.Type})
	}
	return sig
}

// UserFunc implements expr.UserFuncs.
func (f *functions) UserFunc(name string) (expr.UserFunc, error) {
	fn, ok := f.s.cat.Function(name)
	if !ok {
		return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", name)
	}
	if fn.Language != "wasm" {
		return nil, pgerror.New(pgerror.Internal, "function %s is language %s, which is inlined, not called", name, fn.Language)
	}
	return f.compile(fn, nil)
}

// compile returns fn's compiled module, compiling wasm (or, when nil,
// the module the catalog holds) unless it is compiled already.
func (f *functions) compile(fn *catalog.Function, wasm []byte) (*udf.Function, error) {
	key := compileKey(fn)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, pgerror.New(pgerror.AdminShutdown, "the server is shutting down")
	}
	if c, ok := f.compiled[key]; ok {
		return c, nil
	}
	if wasm == nil {
		var ok bool
		if wasm, ok = f.s.cat.Module(fn); !ok {
			return nil, pgerror.New(pgerror.ObjectNotInPrerequisiteState, "function %s: its module (%s) is not in the catalog", fn.Name, shortHash(fn.Module))
		}
	}
	ctx, cancel := context.WithTimeout(f.s.ctx, time.Minute)
	defer cancel()
	c, err := f.rt.Compile(ctx, wasm, fn.Export, signatureOf(fn))
	if err != nil {
		return nil, err
	}
	f.compiled[key] = c
	f.s.log.Info("user function compiled", "function", fn.Name, "module", shortHash(fn.Module), "bytes", len(wasm), "cold_start", c.Cold)
	return c, nil
}

// retire closes the compiled module of a version that was replaced or
// dropped, after retireAfter, unless a current function uses it.
func (f *functions) retire(old *catalog.Function) {
	if old.Language != "wasm" {
		return
	}
	key := compileKey(old)
	time.AfterFunc(retireAfter, func() {
		for _, fn := range f.s.cat.Functions() {
			if compileKey(fn) == key {
				return
			}
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if c, ok := f.compiled[key]; ok && !f.closed {
			delete(f.compiled, key)
			c.Close()
		}
	})
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// CheckFunctionName refuses a name a user function may not have: a
// built-in function's (calls would find the built-in), and the names
// relations may not have either.
func checkFunctionName(name string) error {
	if len(name) > planner.MaxNameLength {
		return pgerror.New(pgerror.MakeCode("42622"), "function name %q is longer than %d characters", name, planner.MaxNameLength)
	}
	if strings.Contains(name, ".") {
		schema, _, _ := strings.Cut(name, ".")
		if schema != "public" {
			return pgerror.New(pgerror.InvalidSchemaName, "schema %q does not exist: user functions live in public", schema)
		}
	}
	if expr.Exists(name) || expr.IsSetFunc(name) || operators.IsAggregate(name) || operators.IsWindowFunc(name) ||
		planner.SpecialFunction(name) {
		return pgerror.New(pgerror.DuplicateFunction, "function %s is built in", name).
			WithHint("Give the user function another name.")
	}
	if strings.HasPrefix(name, "pg_") || strings.HasPrefix(name, "__") || strings.HasPrefix(name, "_fvsql") {
		return pgerror.New(pgerror.InsufficientPrivilege, "name %q is reserved for system functions", name)
	}
	return nil
}

// createFunction runs CREATE [OR REPLACE] FUNCTION; module holds the
// module's bytes when the body was an expression (AS decode(…), AS $1).
func (s *Server) createFunction(ctx context.Context, cf *sql.CreateFunction, module []byte) (pgwire.Result, error) {
	name := strings.TrimPrefix(cf.Name, "public.")
	if err := checkFunctionName(name); err != nil {
		return nil, err
	}
	fn := &catalog.Function{Name: name, Language: cf.Language, Volatility: cf.Volatility, ID: newID(), Version: 1, Created: time.Now().UTC()}
	for _, a := range cf.Args {
		fn.Args = append(fn.Args, catalog.FuncArg{Name: a.Name, Type: a.Type})
	}
	if cf.Returns != nil {
		fn.Ret = cf.Returns.Type
	}
	seen := map[string]bool{}
	for _, c := range cf.Table {
		if seen[c.Name] {
			return nil, pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		seen[c.Name] = true
		fn.Table = append(fn.Table, catalog.Column{Name: c.Name, Type: c.Type})
	}
	var err error
	switch cf.Language {
	case "wasm":
		module, err = s.defineWasm(cf, fn, module)
	case "sql":
		err = s.defineSQL(cf, fn)
	default:
		err = pgerror.NotSupported("LANGUAGE %s", cf.Language).WithHint("fvsql runs LANGUAGE wasm (sandboxed WebAssembly) and LANGUAGE sql.")
	}
	if err != nil {
		return nil, err
	}
	s.ddl.Lock()
	defer s.ddl.Unlock()
	old, exists := s.cat.Function(name)
	if exists {
		if !cf.OrReplace {
			return nil, pgerror.New(pgerror.DuplicateFunction, "function %s already exists", old.Signature())
		}
		if old.Signature() != fn.Signature() {
			return nil, pgerror.New(pgerror.DuplicateFunction, "function %s already exists with other arguments: %s", name, old.Signature()).
				WithHint("fvsql has one function per name: DROP FUNCTION %s first.", name)
		}
		if old.Result() != fn.Result() {
			return nil, pgerror.New(pgerror.InvalidFunctionDefinition, "cannot change return type of existing function").
				WithDetail("%s returns %s.", old.Signature(), old.Result()).
				WithHint("Use DROP FUNCTION %s first.", name)
		}
		fn.Replaces, fn.Version = old.ID, old.Version+1
	}
	if err := s.publishModule(ctx, fn, module); err != nil {
		s.deleteModule(ctx, fn)
		return nil, err
	}
	value, err := catalog.EncodeFunction(fn)
	if err != nil {
		return nil, err
	}
	if err := s.catLog.publishRecord(ctx, catalog.FunctionKey(name), value); err != nil {
		s.deleteModule(ctx, fn)
		return nil, err
	}
	if got, ok := s.cat.Function(name); !ok || got.ID != fn.ID {
		s.deleteModule(ctx, fn)
		return nil, pgerror.New(pgerror.DuplicateFunction, "function %s was created or replaced concurrently by another process", name)
	}
	if old != nil {
		s.deleteModule(ctx, old) // the replaced version's
	}
	return tagOnly("CREATE FUNCTION"), nil
}

// defineWasm reads the module (unless given), checks it against the
// signature by compiling it (the compiled module is kept for the first
// calls), and fills in fn's module fields.
func (s *Server) defineWasm(cf *sql.CreateFunction, fn *catalog.Function, module []byte) ([]byte, error) {
	export := ""
	for _, o := range cf.Options {
		switch o.Key {
		case "export":
			export = o.Value
		default:
			return nil, pgerror.New(pgerror.InvalidParameterValue, "unrecognized function option %q", o.Key).WithHint("Valid options are: export.")
		}
	}
	if export == "" {
		export = fn.Name
	}
	fn.Body = "(bytes)"
	if module == nil {
		var err error
		if module, err = s.readModule(cf.Body); err != nil {
			return nil, err
		}
		fn.Body = cf.Body
	}
	fn.Export, fn.Module, fn.ModuleSize = export, udf.Hash(module), len(module)
	fn.Chunks = (len(module) + catalog.ModuleChunk - 1) / catalog.ModuleChunk
	_, err := s.funcs.compile(fn, module)
	return module, err
}

// refName is the NAME of ref:NAME: a file name without directories.
var refName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// readModule reads a module named by a wasm function's body: ref:NAME
// (NAME.wasm in FV_TRANSFORMS_DIR, the stream-pipeline engine's
// transforms), or a path, file:// or not, under the server's file root.
// Both are opened through os.Root, so no "..", absolute path or symlink
// leaves the directory.
func (s *Server) readModule(body string) ([]byte, error) {
	var dir, rel string
	switch {
	case strings.HasPrefix(body, "ref:"):
		name := strings.TrimPrefix(body, "ref:")
		if !refName.MatchString(name) || strings.Contains(name, "..") {
			return nil, pgerror.New(pgerror.InvalidParameterValue, "module reference %q: a ref names a file in FV_TRANSFORMS_DIR, without directories", body)
		}
		if s.cfg.TransformsDir == "" {
			return nil, pgerror.New(pgerror.InvalidParameterValue, "module reference %q: FV_TRANSFORMS_DIR (--transforms-dir) is not set", body)
		}
		dir, rel = s.cfg.TransformsDir, strings.TrimSuffix(name, ".wasm")+".wasm"
	default:
		p := strings.TrimPrefix(body, "file://")
		if p == "" {
			return nil, pgerror.New(pgerror.InvalidFunctionDefinition, "a wasm function's body names its module (ref:NAME or a path under the file root), or is its bytes (AS decode('…', 'base64'))")
		}
		root, err := filepath.Abs(s.cfg.FileRoot)
		if err != nil {
			return nil, err
		}
		dir = root
		if filepath.IsAbs(p) {
			r, err := filepath.Rel(root, filepath.Clean(p))
			if err != nil || !filepath.IsLocal(r) {
				return nil, pgerror.New(pgerror.InsufficientPrivilege, "module %s is outside the server's file root %s", p, root)
			}
			p = r
		}
		rel = p
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, pgerror.Wrap(err, pgerror.IOError, "module directory %s", dir)
	}
	defer r.Close()
	file, err := r.Open(rel)
	if err != nil {
		code := pgerror.IOError
		if errors.Is(err, os.ErrNotExist) {
			code = pgerror.UndefinedFile
		} else if strings.Contains(err.Error(), "escapes") {
			code = pgerror.InsufficientPrivilege
		}
		return nil, pgerror.Wrap(err, code, "module %s: %v", body, err)
	}
	defer file.Close()
	limit := int64(s.funcs.rt.Limits().ModuleBytes)
	b, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil {
		return nil, pgerror.Wrap(err, pgerror.IOError, "module %s: %v", body, err)
	}
	if int64(len(b)) > limit {
		return nil, pgerror.New(pgerror.ProgramLimitExceeded, "module %s is over the limit of %d bytes", body, limit)
	}
	return b, nil
}

// defineSQL checks a sql function's body: SELECT <expression> over its
// arguments, of a type that casts to its result.
func (s *Server) defineSQL(cf *sql.CreateFunction, fn *catalog.Function) error {
	if cf.BodyExpr != nil {
		return pgerror.New(pgerror.InvalidFunctionDefinition, "a sql function's body is its text: AS 'SELECT …'")
	}
	if len(cf.Options) > 0 {
		return pgerror.New(pgerror.InvalidParameterValue, "unrecognized function option %q", cf.Options[0].Key).WithHint("A sql function takes no options.")
	}
	if fn.IsTable() {
		return pgerror.NotSupported("a sql table function").WithHint("Write a view, or a wasm table function.")
	}
	fn.Body = cf.Body
	_, err := planner.PlanFunctionCall(withFunction{s.cat, fn}, fn)
	return err
}

// withFunction is the catalog with a function being defined, so that its
// body is checked as its calls will be planned.
type withFunction struct {
	*catalog.Catalog
	fn *catalog.Function
}

func (w withFunction) Function(name string) (*catalog.Function, bool) {
	if name == w.fn.Name {
		return w.fn, true
	}
	return w.Catalog.Function(name)
}

// publishModule writes the module's chunks to the catalog log, under
// the function version's ID.
func (s *Server) publishModule(ctx context.Context, fn *catalog.Function, module []byte) error {
	for i := 0; i < fn.Chunks; i++ {
		lo, hi := i*catalog.ModuleChunk, min((i+1)*catalog.ModuleChunk, len(module))
		if err := s.catLog.publishRecord(ctx, catalog.ModuleKey(fn.ID, i), module[lo:hi]); err != nil {
			return err
		}
	}
	return nil
}

// deleteModule deletes a function version's chunks from the catalog log
// (after the version was dropped, replaced, or lost a race).
func (s *Server) deleteModule(ctx context.Context, fn *catalog.Function) {
	for i := 0; i < fn.Chunks; i++ {
		if err := s.catLog.publishRecord(ctx, catalog.ModuleKey(fn.ID, i), nil); err != nil {
			s.log.Warn("deleting a function's module from the catalog failed", "function", fn.Name, "err", err)
			return
		}
	}
}

// dropFunction runs DROP FUNCTION: refused while a pipeline calls the
// function (2BP01); the module's records go when no function runs it.
func (s *Server) dropFunction(ctx context.Context, d *sql.DropFunction) (pgwire.Result, error) {
	s.ddl.Lock()
	defer s.ddl.Unlock()
	res := tagOnly("DROP FUNCTION")
	for _, ref := range d.Funcs {
		name := strings.TrimPrefix(ref.Name, "public.")
		fn, ok := s.cat.Function(name)
		if ok && ref.HasArgs {
			var ts []types.Type
			for _, a := range ref.Args {
				ts = append(ts, a.Type)
			}
			ok = (&catalog.Function{Name: name, Args: argsOf(ts)}).Signature() == fn.Signature()
		}
		if !ok {
			what := name
			if ref.HasArgs {
				var ts []types.Type
				for _, a := range ref.Args {
					ts = append(ts, a.Type)
				}
				what = (&catalog.Function{Name: name, Args: argsOf(ts)}).Signature()
			}
			if d.IfExists {
				res.notices = append(res.notices, "function "+what+" does not exist, skipping")
				continue
			}
			return nil, pgerror.New(pgerror.UndefinedFunction, "function %s does not exist", what)
		}
		if deps := s.functionDependents(name); len(deps) > 0 {
			return nil, pgerror.New(pgerror.DependentObjectsStillExist, "cannot drop function %s because %s %q calls it", fn.Signature(), deps[0].Kind, deps[0].Name).
				WithHint("Drop %s first.", relationNames(deps))
		}
		if err := s.catLog.publishRecord(ctx, catalog.FunctionKey(name), nil); err != nil {
			return nil, err
		}
		s.deleteModule(ctx, fn)
	}
	return res, nil
}

func argsOf(ts []types.Type) []catalog.FuncArg {
	out := make([]catalog.FuncArg, len(ts))
	for i, t := range ts {
		out[i].Type = t
	}
	return out
}

// functionDependents lists the relations whose query calls function name.
func (s *Server) functionDependents(name string) []*catalog.Relation {
	var out []*catalog.Relation
	for _, r := range s.cat.List("") {
		for _, f := range r.Functions {
			if f == name {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

func relationNames(rels []*catalog.Relation) string {
	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = fmt.Sprintf("%s %q", r.Kind, r.Name)
	}
	return strings.Join(names, ", ")
}

// recordingCatalog is the catalog a CREATE … AS plans against: it notes
// the user functions the query's planning looked up, which the relation
// then depends on.
type recordingCatalog struct {
	*catalog.Catalog
	used []string
}

func (r *recordingCatalog) Function(name string) (*catalog.Function, bool) {
	f, ok := r.Catalog.Function(name)
	if ok && !contains(r.used, name) {
		r.used = append(r.used, name)
	}
	return f, ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// functionColumns are SHOW FUNCTIONS's.
var functionColumns = textCols("name", "arguments", "result", "language", "source", "module", "version")

func (s *Server) functionRows() []types.Row {
	var rows []types.Row
	for _, f := range s.cat.Functions() {
		module := types.NullValue
		if f.Module != "" {
			module = types.NewText(fmt.Sprintf("%s… (%d bytes, export %s)", shortHash(f.Module), f.ModuleSize, f.Export))
		}
		rows = append(rows, types.Row{types.NewText(f.Name), types.NewText(f.Arguments()), types.NewText(f.Result()),
			types.NewText(f.Language), types.NewText(f.Body), module, types.NewText(fmt.Sprint(f.Version))})
	}
	return rows
}

// planCreateFunction plans CREATE FUNCTION. A body that is an
// expression (the module's bytes: decode('…', 'base64'), '\x…'::bytea,
// $1) is evaluated when the statement runs, with its parameters.
func (s *session) planCreateFunction(cf *sql.CreateFunction, params []types.Type) (*statement, error) {
	if cf.BodyExpr == nil {
		return s.command("CREATE FUNCTION", func(ctx context.Context) (pgwire.Result, error) {
			return s.srv.createFunction(ctx, cf, nil)
		}), nil
	}
	x, ptypes, err := planner.PlanConstant(s.srv.cat, cf.BodyExpr, params, types.Bytea)
	if err != nil {
		return nil, err
	}
	if x.Type != types.Bytea && x.Type != types.Unknown {
		return nil, pgerror.New(pgerror.DatatypeMismatch, "a function body given as an expression is the module's bytes: bytea, not %s", x.Type).
			WithHint("Write AS decode('<base64>', 'base64'), AS '\\x…'::bytea, or name the module: AS 'ref:NAME'.")
	}
	return &statement{params: ptypes, exec: func(ctx context.Context, vals []types.Value) (pgwire.Result, error) {
		ev, err := expr.CompileEnv(x, &expr.Env{Params: vals})
		if err != nil {
			return nil, err
		}
		v, err := ev(nil)
		if err != nil {
			return nil, err
		}
		if v.IsNull() {
			return nil, pgerror.New(pgerror.NullValueNotAllowed, "the module's bytes are NULL")
		}
		return s.srv.createFunction(ctx, cf, []byte(v.S))
	}}, nil
}

// Catalog is the session's catalog (catalog.SessionCatalog), for the
// functions that describe user functions by OID.
func (s *session) Catalog() *catalog.Catalog { return s.srv.cat }
