package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/state"
	"github.com/fvsql/fvsql/types"
)

// Kind is what a relation is.
type Kind string

// Relation kinds.
const (
	Stream           Kind = "stream"
	MaterializedView Kind = "materialized view"
	Sink             Kind = "sink"
	System           Kind = "system"
)

// FirstOID is the first OID given to user relations, as in PostgreSQL.
const FirstOID = 16384

// Column is one column of a relation.
type Column struct {
	Name    string     `json:"name"`
	Type    types.Type `json:"type"`
	NotNull bool       `json:"not_null,omitempty"`
	Hidden  bool       `json:"hidden,omitempty"` // metadata columns (_key, _offset…) not in SELECT *
}

// Watermark declares a stream's event-time column and its lateness bound.
type Watermark struct {
	Column string `json:"column"`
	// Delay is how far behind the largest event time seen the watermark
	// trails, in microseconds (WATERMARK FOR ts AS ts - INTERVAL '4' SECOND).
	Delay int64 `json:"delay"`
}

// Relation is a stream, materialized view or sink.
type Relation struct {
	OID        uint32            `json:"oid"`
	ID         string            `json:"id"` // unique per create, to tell racing creates apart
	Name       string            `json:"name"`
	Kind       Kind              `json:"kind"`
	Columns    []Column          `json:"columns"`
	Watermark  *Watermark        `json:"watermark,omitempty"`
	Backend    string            `json:"backend,omitempty"` // URI; "" is the server's Kafka
	Topic      string            `json:"topic"`             // stream key on the backend
	Format     string            `json:"format"`
	Partitions int               `json:"partitions"`
	Key        []string          `json:"key,omitempty"` // partitioning columns
	Options    map[string]string `json:"options,omitempty"`
	SQL        string            `json:"sql,omitempty"`  // defining query of a continuous relation
	Plan       json.RawMessage   `json:"plan,omitempty"` // its topology, as the engine runs it
	// Functions are the user functions its query calls (DROP FUNCTION
	// is refused while it exists).
	Functions []string  `json:"functions,omitempty"`
	Created   time.Time `json:"created"`
}

// MetaColumns are the record metadata every stream exposes after its
// declared columns: hidden from SELECT *, readable by name.
var MetaColumns = []Column{
	{Name: "_key", Type: types.Text, Hidden: true},
	{Name: "_partition", Type: types.Int4, Hidden: true},
	{Name: "_offset", Type: types.Int8, Hidden: true},
	{Name: "_timestamp", Type: types.TimestampTZ, Hidden: true},
}

// HasMeta reports whether reads of the relation carry MetaColumns.
func (r *Relation) HasMeta() bool { return r.Kind == Stream }

// ReadColumns are the columns a read of the relation produces: the
// declared ones, then the metadata columns for streams. A declared column
// named like a metadata column (a continuous stream selecting _key)
// shadows it: the metadata column keeps its place in the row but has no
// name, so the name means the declared column.
func (r *Relation) ReadColumns() []Column {
	if !r.HasMeta() {
		return r.Columns
	}
	out := append(append([]Column(nil), r.Columns...), MetaColumns...)
	for i := len(r.Columns); i < len(out); i++ {
		if r.ColumnIndex(out[i].Name) >= 0 {
			out[i].Name = ""
		}
	}
	return out
}

// Shadowed reports whether a declared column of the relation hides the
// metadata column meta.
func (r *Relation) Shadowed(meta Column) bool { return r.ColumnIndex(meta.Name) >= 0 }

// ColumnIndex returns the index of the named column, or -1.
func (r *Relation) ColumnIndex(name string) int {
	for i, c := range r.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// ColumnNames lists the column names in order.
func (r *Relation) ColumnNames() []string {
	out := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = c.Name
	}
	return out
}

// ColumnTypes lists the column types in order.
func (r *Relation) ColumnTypes() []types.Type {
	out := make([]types.Type, len(r.Columns))
	for i, c := range r.Columns {
		out[i] = c.Type
	}
	return out
}

// Catalog holds the relations.
type Catalog struct {
	store   *state.Store
	mu      sync.RWMutex
	rels    map[string]*Relation
	dynamic map[string]*systemTable
	funcs   map[string]*Function                        // user functions, by name
	modules map[string]map[int][]byte                   // wasm modules' chunks, by hash and index
	users   []string                                    // SetRoles
	setting func(ctx context.Context) map[string]string // SetSettingsSource
}

// Open loads the catalog from the store.
func Open(store *state.Store) (*Catalog, error) {
	c := &Catalog{store: store, rels: map[string]*Relation{}}
	err := store.Scan(state.CatalogPrefix(), func(_, v []byte) error {
		var r Relation
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("catalog: corrupt relation record: %w", err)
		}
		c.rels[r.Name] = &r
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Get returns the relation with the given name.
func (c *Catalog) Get(name string) (*Relation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	r, ok := c.rels[name]
	return r, ok
}

// ByOID returns the relation with the given OID.
func (c *Catalog) ByOID(oid uint32) (*Relation, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, r := range c.rels {
		if r.OID == oid {
			return r, true
		}
	}
	return nil, false
}

// List returns the relations of a kind ("" for all), ordered by name.
func (c *Catalog) List(kind Kind) []*Relation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Relation
	for _, r := range c.rels {
		if kind == "" || r.Kind == kind {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Change is what applying one catalog log record did.
type Change struct {
	Created *Relation // set when a relation appeared
	Deleted *Relation // set when a relation went away
	// FunctionCreated is set when a function appeared or was replaced
	// (FunctionReplaced: the version it replaced); FunctionDeleted when
	// one went away.
	FunctionCreated  *Function
	FunctionReplaced *Function
	FunctionDeleted  *Function
}

// Apply applies one record of the catalog log (the compacted Kafka topic
// all fvsql processes share; see ARCHITECTURE.md). A nil value deletes
// the relation. The first create of a name wins: a later create record for
// a name that exists (another process raced us) is ignored, and its author
// sees that its ID lost. A relation's OID is FirstOID plus the offset of
// the record that created it, so every process assigns the same OID.
// Apply also refreshes the local Pebble copy.
func (c *Catalog) Apply(offset int64, name string, value []byte) (Change, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(name, functionKeyPrefix):
		return c.applyFunction(offset, strings.TrimPrefix(name, functionKeyPrefix), value)
	case strings.HasPrefix(name, moduleKeyPrefix):
		return Change{}, c.applyModule(name, value)
	}
	key := state.CatalogKey(name)
	if value == nil {
		old, ok := c.rels[name]
		if !ok {
			return Change{}, nil
		}
		delete(c.rels, name)
		return Change{Deleted: old}, c.store.Delete(key)
	}
	var r Relation
	if err := json.Unmarshal(value, &r); err != nil {
		return Change{}, fmt.Errorf("catalog: record at offset %d: %w", offset, err)
	}
	if old, ok := c.rels[name]; ok {
		if old.ID != r.ID {
			return Change{}, nil // first create wins
		}
		return Change{}, nil // already applied
	}
	r.OID = FirstOID + uint32(offset)
	data, err := json.Marshal(&r)
	if err != nil {
		return Change{}, err
	}
	if err := c.store.Set(key, data); err != nil {
		return Change{}, err
	}
	c.rels[name] = &r
	return Change{Created: &r}, nil
}

// Reset forgets every relation (before a full replay of the log).
func (c *Catalog) Reset() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.rels {
		if err := c.store.Delete(state.CatalogKey(name)); err != nil {
			return err
		}
	}
	c.rels = map[string]*Relation{}
	c.funcs, c.modules = nil, nil
	return nil
}

// Encode serialises a relation for the catalog log.
func Encode(r *Relation) ([]byte, error) { return json.Marshal(r) }
