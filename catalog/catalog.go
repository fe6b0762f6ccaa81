package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/fvsql/fvsql/pgerror"
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
	Created    time.Time         `json:"created"`
}

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
	nextOID uint32
	dynamic map[string]*systemTable
}

var (
	relPrefix = []byte("catalog/rel/")
	oidKey    = []byte("catalog/next_oid")
)

// Open loads the catalog from the store.
func Open(store *state.Store) (*Catalog, error) {
	c := &Catalog{store: store, rels: map[string]*Relation{}, nextOID: FirstOID}
	err := store.Scan(relPrefix, func(_, v []byte) error {
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
	if v, err := store.Get(oidKey); err == nil {
		n, err := strconv.ParseUint(string(v), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("catalog: corrupt next OID: %w", err)
		}
		c.nextOID = uint32(n)
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

// Reserve checks that name is free and assigns the relation an OID, so
// that side effects (topics) can be created before Put makes it visible.
func (c *Catalog) Reserve(r *Relation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.rels[r.Name]; ok {
		return pgerror.New(pgerror.DuplicateTable, "relation %q already exists", r.Name)
	}
	r.OID = c.nextOID
	c.nextOID++
	if r.Created.IsZero() {
		r.Created = time.Now().UTC()
	}
	return c.store.Set(oidKey, []byte(strconv.FormatUint(uint64(c.nextOID), 10)))
}

// Put stores a relation durably, creating or replacing it.
func (c *Catalog) Put(r *Relation) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.store.Set(append(relPrefix[:len(relPrefix):len(relPrefix)], r.Name...), data); err != nil {
		return err
	}
	c.rels[r.Name] = r
	return nil
}

// Delete removes a relation.
func (c *Catalog) Delete(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.rels[name]; !ok {
		return pgerror.New(pgerror.UndefinedTable, "relation %q does not exist", name)
	}
	if err := c.store.Delete(append(relPrefix[:len(relPrefix):len(relPrefix)], name...)); err != nil {
		return err
	}
	delete(c.rels, name)
	return nil
}
