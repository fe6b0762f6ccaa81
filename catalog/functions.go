package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fvsql/fvsql/types"
)

// Function is a user function (CREATE FUNCTION): its signature, its
// language and body, and for wasm the module it runs, named by the
// SHA-256 of its bytes, which the catalog log holds in chunks beside the
// function's record (ModuleKey), so that every process, and one whose
// data directory was wiped, gets them back.
type Function struct {
	OID      uint32     `json:"oid"`
	ID       string     `json:"id"`
	Name     string     `json:"name"`
	Args     []FuncArg  `json:"args"`
	Ret      types.Type `json:"ret,omitempty"`   // a scalar function's result
	Table    []Column   `json:"table,omitempty"` // a table function's columns
	Language string     `json:"language"`        // "wasm" or "sql"
	// Body is a sql function's query (SELECT expr over its arguments),
	// and for wasm where the module came from, as written (ref:NAME, a
	// path, or "(bytes)").
	Body       string `json:"body"`
	Export     string `json:"export,omitempty"`
	Module     string `json:"module,omitempty"` // hex SHA-256 of the module
	ModuleSize int    `json:"module_size,omitempty"`
	Chunks     int    `json:"chunks,omitempty"` // records the module is stored in
	Volatility string `json:"volatility,omitempty"`
	// Replaces is the ID of the version a CREATE OR REPLACE replaced; a
	// replacement of another version than the current one is ignored
	// (another process replaced it first).
	Replaces string    `json:"replaces,omitempty"`
	Version  int       `json:"version"` // 1, then one more per replacement
	Created  time.Time `json:"created"`
}

// FuncArg is one argument of a function; Name may be empty.
type FuncArg struct {
	Name string     `json:"name,omitempty"`
	Type types.Type `json:"type"`
}

// ArgTypes lists the argument types.
func (f *Function) ArgTypes() []types.Type {
	out := make([]types.Type, len(f.Args))
	for i, a := range f.Args {
		out[i] = a.Type
	}
	return out
}

// IsTable reports whether f returns rows (RETURNS TABLE).
func (f *Function) IsTable() bool { return len(f.Table) > 0 }

// Signature renders name(type, …).
func (f *Function) Signature() string {
	parts := make([]string, len(f.Args))
	for i, a := range f.Args {
		parts[i] = a.Type.String()
	}
	return f.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Arguments renders the arguments as pg_get_function_arguments does.
func (f *Function) Arguments() string {
	parts := make([]string, len(f.Args))
	for i, a := range f.Args {
		parts[i] = a.Type.String()
		if a.Name != "" {
			parts[i] = a.Name + " " + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}

// Result renders the result as pg_get_function_result does.
func (f *Function) Result() string {
	if !f.IsTable() {
		return f.Ret.String()
	}
	parts := make([]string, len(f.Table))
	for i, c := range f.Table {
		parts[i] = c.Name + " " + c.Type.String()
	}
	return "TABLE(" + strings.Join(parts, ", ") + ")"
}

// Keys of the catalog log's records other than relations': no relation
// name starts with "__" (Kafka's prefix, refused for names).
const (
	functionKeyPrefix = "__function:"
	moduleKeyPrefix   = "__module:"
)

// FunctionKey is the catalog log key of function name's record.
func FunctionKey(name string) string { return functionKeyPrefix + name }

// ModuleKey is the catalog log key of chunk i of the module of the
// function version with ID id.
func ModuleKey(id string, i int) string { return moduleKeyPrefix + id + ":" + strconv.Itoa(i) }

// ModuleChunk is the most bytes one catalog record of a module holds
// (well under Kafka's default 1 MiB record limit).
const ModuleChunk = 256 << 10

// EncodeFunction serialises a function for the catalog log.
func EncodeFunction(f *Function) ([]byte, error) { return json.Marshal(f) }

// applyFunction applies a function record (value nil: a drop).
func (c *Catalog) applyFunction(offset int64, name string, value []byte) (Change, error) {
	if c.funcs == nil {
		c.funcs = map[string]*Function{}
	}
	old := c.funcs[name]
	if value == nil {
		if old == nil {
			return Change{}, nil
		}
		delete(c.funcs, name)
		return Change{FunctionDeleted: old}, nil
	}
	var f Function
	if err := json.Unmarshal(value, &f); err != nil {
		return Change{}, fmt.Errorf("catalog: function record at offset %d: %w", offset, err)
	}
	switch {
	case old == nil && f.Replaces == "":
		f.OID = FirstOID + uint32(offset)
	case old != nil && f.Replaces != "" && f.Replaces == old.ID:
		f.OID = old.OID // a replacement keeps the function's OID, as in PostgreSQL
	default:
		return Change{}, nil // first create (or replacement) wins; already applied
	}
	c.funcs[name] = &f
	return Change{FunctionCreated: &f, FunctionReplaced: old}, nil
}

// applyModule applies a module chunk record (value nil: deleted).
func (c *Catalog) applyModule(key string, value []byte) error {
	rest := strings.TrimPrefix(key, moduleKeyPrefix)
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return fmt.Errorf("catalog: module record key %q", key)
	}
	id := rest[:i]
	n, err := strconv.Atoi(rest[i+1:])
	if err != nil || n < 0 {
		return fmt.Errorf("catalog: module record key %q", key)
	}
	if c.modules == nil {
		c.modules = map[string]map[int][]byte{}
	}
	if value == nil {
		delete(c.modules[id], n)
		if len(c.modules[id]) == 0 {
			delete(c.modules, id)
		}
		return nil
	}
	if c.modules[id] == nil {
		c.modules[id] = map[int][]byte{}
	}
	c.modules[id][n] = bytes.Clone(value)
	return nil
}

// Function returns the user function called name.
func (c *Catalog) Function(name string) (*Function, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	f, ok := c.funcs[name]
	return f, ok
}

// Functions lists the user functions by name.
func (c *Catalog) Functions() []*Function {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Function, 0, len(c.funcs))
	for _, f := range c.funcs {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// FunctionByOID returns the user function with the given OID.
func (c *Catalog) FunctionByOID(oid uint32) (*Function, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, f := range c.funcs {
		if f.OID == oid {
			return f, true
		}
	}
	return nil, false
}

// Module returns the bytes of the module f runs, assembled from its
// chunks and checked against its hash; false while one is missing.
func (c *Catalog) Module(f *Function) ([]byte, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	chunks := c.modules[f.ID]
	if f.Module == "" || len(chunks) < f.Chunks {
		return nil, false
	}
	out := make([]byte, 0, f.ModuleSize)
	for i := range f.Chunks {
		b, ok := chunks[i]
		if !ok {
			return nil, false
		}
		out = append(out, b...)
	}
	sum := sha256.Sum256(out)
	return out, len(out) == f.ModuleSize && hex.EncodeToString(sum[:]) == f.Module
}

// WasmLanguageOID is pg_language's row for LANGUAGE wasm.
const WasmLanguageOID = 13391

// procRow is a user function's row of pg_proc.
func (f *Function) procRow() types.Row {
	lang := uint32(14) // sql
	if f.Language == "wasm" {
		lang = WasmLanguageOID
	}
	vol := "v"
	switch f.Volatility {
	case "immutable":
		vol = "i"
	case "stable":
		vol = "s"
	}
	argOIDs := make([]types.Value, len(f.Args))
	names := make([]types.Value, 0, len(f.Args)+len(f.Table))
	named := false
	for i, a := range f.Args {
		argOIDs[i] = oid(a.Type.OID())
		names = append(names, text(a.Name))
		named = named || a.Name != ""
	}
	ret, rows := f.Ret.OID(), float64(0)
	allTypes, modes := types.NullValue, types.NullValue
	if f.IsTable() {
		ret, rows, named = 2249, 1000, true // record
		all := append([]types.Value(nil), argOIDs...)
		ms := make([]types.Value, 0, len(f.Args)+len(f.Table))
		for range f.Args {
			ms = append(ms, char("i"))
		}
		for _, c := range f.Table {
			all = append(all, oid(c.Type.OID()))
			ms = append(ms, char("t"))
			names = append(names, text(c.Name))
		}
		allTypes = types.NewArray(types.OidArray, all)
		modes = types.NewArray(types.CharArray, ms)
	}
	argNames := types.NullValue
	if named {
		argNames = types.NewArray(types.TextArray, names)
	}
	return types.Row{
		oid(f.OID), name(f.Name), oid(PublicOID), oid(10),
		oid(lang), float4(100), float4(rows), oid(0), oid(0), char("f"),
		boolean(false), boolean(false), boolean(f.Language == "wasm"), boolean(f.IsTable()), char(vol),
		char("s"), i2(len(f.Args)), i2(0), oid(ret), types.NewArray(types.OidVector, argOIDs),
		allTypes, modes, argNames, types.NullValue,
		types.NullValue, text(f.Body), types.NullValue, types.NullValue, types.NullValue, types.NullValue,
	}
}

// SessionCatalog is what a session gives the functions that describe
// catalog objects by OID (pg_get_function_result, …): its catalog, where
// the user functions are.
type SessionCatalog interface{ Catalog() *Catalog }

func sessionFunction(sess any, o uint32) *Function {
	if sc, ok := sess.(SessionCatalog); ok && sc.Catalog() != nil {
		if f, ok := sc.Catalog().FunctionByOID(o); ok {
			return f
		}
	}
	return nil
}

// Definition is the function as CREATE FUNCTION, as
// pg_get_functiondef prints it (psql's \sf). A wasm function whose module
// came as bytes says so in a comment: its body is not re-created.
func (f *Function) Definition() string {
	var sb strings.Builder
	sb.WriteString("CREATE OR REPLACE FUNCTION public." + f.Name + "(" + f.Arguments() + ")\n")
	sb.WriteString(" RETURNS " + f.Result() + "\n")
	sb.WriteString(" LANGUAGE " + f.Language + "\n")
	if f.Volatility != "" {
		sb.WriteString(" " + strings.ToUpper(f.Volatility) + "\n")
	}
	if f.Language == "wasm" && f.Export != f.Name {
		sb.WriteString(" WITH (export = '" + f.Export + "')\n")
	}
	if f.Language == "wasm" && f.Body == "(bytes)" {
		fmt.Fprintf(&sb, "-- the module's %d bytes (SHA-256 %s) came with the statement\n", f.ModuleSize, f.Module)
	}
	sb.WriteString("AS $function$" + f.Body + "$function$\n")
	return sb.String()
}
