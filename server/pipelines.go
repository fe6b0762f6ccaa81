package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/engine"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/pgwire"
	"github.com/fvsql/fvsql/plan"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// host answers the engine's questions from the catalog.
type host struct {
	s       *Server
	mu      sync.Mutex
	records map[string]engine.Record
}

var _ engine.Host = (*host)(nil)

func (h *host) Topology(_ context.Context, name string) (*plan.Topology, error) {
	rel, ok := h.s.cat.Get(name)
	if !ok || len(rel.Plan) == 0 {
		return nil, pgerror.New(pgerror.UndefinedObject, "pipeline %q does not exist", name)
	}
	return topologyOf(rel)
}

// checkStartTime refuses, before anything is created, a start time on a
// pipeline that reads a stream on a backend that cannot start there (a
// text file: its lines have no times), by opening a consumer of each
// such input at the time: the ingest bridge would fail the same way on
// every try, leaving the pipeline RETRYING for good.
func (s *Server) checkStartTime(ctx context.Context, cq *planner.Continuous) error {
	if cq.Topology.StartTime == 0 {
		return nil
	}
	for _, in := range cq.Inputs {
		if in.Kind != catalog.Stream || in.Backend == "" {
			continue
		}
		st, err := s.backend(ctx, in)
		if err != nil {
			return err
		}
		c, err := st.Consumer(ctx, in.Topic, backends.ConsumerOptions{StartTime: time.UnixMicro(cq.Topology.StartTime)})
		if err != nil {
			code := pgerror.IOError
			if errors.Is(err, backends.ErrCannotSeek) {
				code = pgerror.FeatureNotSupported
			}
			return pgerror.Wrap(err, code, "stream %q cannot start at start_time", in.Name)
		}
		c.Close()
	}
	return nil
}

// topologyOf decodes a pipeline relation's stored topology.
func topologyOf(rel *catalog.Relation) (*plan.Topology, error) {
	var t plan.Topology
	if err := json.Unmarshal(rel.Plan, &t); err != nil {
		return nil, pgerror.New(pgerror.Internal, "pipeline %q: corrupt plan: %v", rel.Name, err)
	}
	return &t, nil
}

func (h *host) Stream(_ context.Context, name string) (*plan.Stream, error) {
	rel, ok := h.s.cat.Get(name)
	if !ok {
		return nil, pgerror.New(pgerror.UndefinedTable, "stream %q does not exist", name)
	}
	return planner.StreamOf(rel), nil
}

func (h *host) Backend(ctx context.Context, name string) (backends.Streamer, string, error) {
	rel, ok := h.s.cat.Get(name)
	if !ok {
		return nil, "", pgerror.New(pgerror.UndefinedTable, "stream %q does not exist", name)
	}
	st, err := h.s.backend(ctx, rel)
	return st, rel.Topic, err
}

func (h *host) Heartbeat(_ context.Context, name string) engine.Signal {
	if _, ok := h.s.cat.Get(name); !ok {
		return engine.Stop
	}
	return engine.Continue
}

func (h *host) PutRecord(rec engine.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records[rec.Pipeline] = rec
}

func (h *host) AwaitView(ctx context.Context, view string) error {
	c := h.s.views.get(view)
	if c == nil {
		return nil
	}
	return c.waitFor(ctx, h.s)
}

// nodeID is this data directory's identity among the processes sharing
// pipelines: random once, then stable across restarts.
func nodeID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "node-id")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) && err != nil {
		return "", err
	}
	var buf [6]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(buf[:])
	if err := os.WriteFile(path, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	return id, nil
}

// startPipelines starts every continuous query of the catalog, oldest first.
func (s *Server) startPipelines(ctx context.Context) {
	rels := s.cat.List("")
	sort.Slice(rels, func(i, j int) bool { return rels[i].OID < rels[j].OID })
	for _, r := range rels {
		if len(r.Plan) == 0 {
			continue
		}
		if err := s.engine.Start(ctx, r.Name); err != nil {
			s.log.Error("pipeline did not start", "pipeline", r.Name, "err", err)
		}
	}
}

// createAs creates a continuous query: its output and errors streams,
// their topics, the catalog records, then the running pipeline.
func (s *Server) createAs(ctx context.Context, ca *sql.CreateAs, text string) (pgwire.Result, error) {
	tag := "CREATE " + strings.ToUpper(string(ca.Kind))
	s.ddl.Lock()
	defer s.ddl.Unlock()
	if _, ok := s.cat.Get(ca.Name); ok {
		if ca.IfNotExists {
			return &rowsResult{tag: tag, notices: []string{"relation \"" + ca.Name + "\" already exists, skipping"}}, nil
		}
		return nil, pgerror.New(pgerror.DuplicateTable, "relation %q already exists", ca.Name)
	}
	rec := &recordingCatalog{Catalog: s.cat}
	cq, err := planner.PlanContinuous(rec, ca)
	if err != nil {
		return nil, err
	}
	cq.Rel.Functions = rec.used
	owned := []*catalog.Relation{cq.Errors}
	if cq.Changes != nil {
		owned = append(owned, cq.Changes)
	}
	for _, rel := range owned {
		if _, ok := s.cat.Get(rel.Name); ok {
			return nil, pgerror.New(pgerror.DuplicateTable, "relation %q (which the pipeline would own) already exists", rel.Name)
		}
	}
	cq.Rel.ID = newID()
	cq.Topology.Incarnation = cq.Rel.ID[:8]
	cq.Topology.Version = plan.Version
	for i := range cq.Topology.Ingest {
		cq.Topology.Ingest[i].Group = "fvsql." + cq.Rel.Name + "." + cq.Rel.ID
	}
	if cq.Rel.Plan, err = json.Marshal(cq.Topology); err != nil {
		return nil, err
	}
	cq.Rel.SQL = text
	rels := append(owned, cq.Rel)
	// Everything that can be refused is checked before anything is
	// created: a refused CREATE SINK left its <name>_errors stream behind.
	for _, rel := range rels {
		if err := planner.TopicFits(rel, s.cfg.TopicPrefix); err != nil {
			return nil, err
		}
		if _, err := s.backend(ctx, rel); err != nil {
			return nil, err
		}
	}
	if err := s.checkStartTime(ctx, cq); err != nil {
		return nil, err
	}
	var published []string
	undo := func() {
		for i := len(published) - 1; i >= 0; i-- {
			_ = s.catLog.publish(ctx, published[i], nil)
		}
	}
	for _, rel := range rels {
		spec := backends.StreamSpec{Name: rel.Topic, Shards: rel.Partitions, Options: rel.Options}
		if rel.Kind == catalog.MaterializedView {
			// the view's table: latest row per key, so it can be rebuilt
			spec.Options = map[string]string{"cleanup.policy": "compact"}
		}
		st, err := s.backend(ctx, rel)
		if err == nil {
			err = st.CreateStream(ctx, spec)
		}
		if err == nil {
			err = s.catLog.publish(ctx, rel.Name, rel)
		}
		if err != nil {
			undo()
			return nil, err
		}
		published = append(published, rel.Name)
	}
	if err := s.engine.Start(ctx, cq.Rel.Name); err != nil {
		// nothing may be left half-created: take the relations back
		s.dropPipeline(ctx, cq.Rel)
		_ = s.catLog.publish(ctx, cq.Rel.Name, nil)
		return nil, err
	}
	return tagOnly(tag), nil
}

// dropPipeline stops a pipeline and removes what it owns.
func (s *Server) dropPipeline(ctx context.Context, rel *catalog.Relation) {
	if topo, err := topologyOf(rel); err == nil {
		s.engine.Drop(ctx, rel.Name, topo)
	} else {
		s.engine.Stop(rel.Name)
	}
	for _, suffix := range []string{planner.ErrorsSuffix, planner.ChangesSuffix} {
		if owned, ok := s.cat.Get(rel.Name + suffix); ok && owned.Options["pipeline"] == rel.Name {
			if err := s.catLog.publish(ctx, owned.Name, nil); err == nil {
				_ = s.kafka.DropStream(ctx, owned.Topic)
			}
		}
	}
}

// dependents lists the pipelines reading a relation (once each).
func (s *Server) dependents(name string) []string {
	var out []string
	for _, r := range s.cat.List("") {
		if len(r.Plan) == 0 || r.Name == name {
			continue
		}
		topo, err := topologyOf(r)
		if err != nil {
			continue
		}
	stages:
		for _, st := range topo.Stages {
			for _, in := range st.Inputs {
				if in == name {
					out = append(out, r.Name)
					break stages
				}
			}
			for _, step := range st.Steps {
				if step.Lookup != nil && step.Lookup.View == name {
					out = append(out, r.Name) // a stream-table join reads the view
					break stages
				}
			}
		}
	}
	return out
}

// pipelineColumns is the schema of SHOW PIPELINES and fvsql_catalog.pipelines.
var pipelineColumns = []catalog.Column{
	{Name: "name", Type: types.Text}, {Name: "status", Type: types.Text},
	{Name: "consumed", Type: types.Int8}, {Name: "emitted", Type: types.Int8},
	{Name: "filtered", Type: types.Int8}, {Name: "dropped", Type: types.Int8},
	{Name: "late", Type: types.Int8}, {Name: "lag", Type: types.Int8},
	{Name: "partitions", Type: types.Int4}, {Name: "epochs", Type: types.Int8},
	{Name: "last_checkpoint", Type: types.TimestampTZ}, {Name: "checkpoint_bytes", Type: types.Int8},
	{Name: "restoring", Type: types.Int4}, {Name: "restored_keys", Type: types.Int8},
	{Name: "state_bytes", Type: types.Int8}, {Name: "watermark", Type: types.Timestamp},
	{Name: "error", Type: types.Text},
}

// pipelineRows renders the live records of the pipelines.
func (s *Server) pipelineRows(ctx context.Context) []types.Row {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lags := s.engine.Lag(ctx)
	var rows []types.Row
	for _, r := range s.engine.Records() {
		lag := types.NullValue
		if l, ok := lags[r.Pipeline]; ok && l >= 0 {
			lag = types.NewInt8(l)
		}
		last := types.NullValue
		if !r.LastCheckpoint.IsZero() {
			last = types.NewTimestamp(types.TimestampTZ, r.LastCheckpoint.UnixMicro())
		}
		wm := types.NullValue
		if !r.Watermark.IsZero() {
			wm = types.NewTimestamp(types.Timestamp, r.Watermark.UnixMicro())
		}
		errText := types.NullValue
		if r.Error != "" {
			errText = types.NewText(r.Error)
		}
		rows = append(rows, types.Row{
			types.NewText(r.Pipeline), types.NewText(r.Status),
			types.NewInt8(r.Consumed), types.NewInt8(r.Emitted), types.NewInt8(r.Filtered), types.NewInt8(r.Dropped),
			types.NewInt8(r.Late), lag, types.NewInt(types.Int4, int64(r.Partitions)), types.NewInt8(r.Epochs), last,
			types.NewInt8(r.CheckpointBytes), types.NewInt(types.Int4, int64(r.Restoring)), types.NewInt8(r.RestoredKeys),
			types.NewInt8(r.StateBytes), wm, errText,
		})
	}
	return rows
}

// newID returns a random identifier for a relation's incarnation.
func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b[:])
}
