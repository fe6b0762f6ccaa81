package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// RecoveryConfig configures the recovery scenario.
type RecoveryConfig struct {
	Keys       int64    // rows = distinct keys of the view (default 1M)
	Pad        int      // bytes of the pad column (default 80)
	Partitions int      // of the input stream (default 4)
	Modes      []string // kept, wiped, graceful (default all three, in that order)
	// CatchupTimeout bounds building the state (default 10m); ReadyTimeout
	// bounds one restart until ready (default 3m).
	CatchupTimeout, ReadyTimeout time.Duration
}

// Recovery targets: time from restart to ready.
const (
	RecoveryKeptTarget  = 2 * time.Second
	RecoveryWipedTarget = 15 * time.Second
)

// recoveryResult is one restart's figures.
type recoveryResult struct {
	mode                  string
	accept                time.Duration // the child answered: pgwire accepting
	owned                 time.Duration // the pipeline first owned every partition (-1: never seen)
	visible               time.Duration // every fresh row's effect visible in the view
	ready                 time.Duration // visible, and RUNNING with restoring = 0 and every partition owned
	stat                  pipeStat
	check                 string
	dataBefore, dataAfter int64 // data dir bytes before the kill and after ready
}

// Recovery runs the recovery scenario.
func Recovery(ctx context.Context, o Options, c RecoveryConfig) error {
	orDefault(&c.Keys, 1_000_000)
	orDefault(&c.Pad, 80)
	orDefault(&c.Partitions, 4)
	orDefaults(&c.Modes, "kept", "wiped", "graceful")
	orDefault(&c.CatchupTimeout, 10*time.Minute)
	orDefault(&c.ReadyTimeout, 3*time.Minute)
	for _, m := range c.Modes {
		if m != "kept" && m != "wiped" && m != "graceful" {
			return fmt.Errorf("unknown mode %q (want kept, wiped, graceful)", m)
		}
	}
	if o.URL != "" || o.Mode != "child" {
		return errors.New("recovery kills the server with SIGKILL: it needs --server child")
	}
	// Without --kafka the bench hosts the embedded broker (child mode), so
	// the broker's log survives a wiped server data directory.
	h, ctx, err := newHarness(ctx, o, true)
	if err != nil {
		return err
	}
	defer h.close()
	dataDir := filepath.Join(h.dir, "recovery-server")
	spec := serverSpec{stream: h.o.Stream, dataDir: dataDir}
	if err := h.serve(ctx, spec); err != nil {
		return err
	}
	in, view := "rin", "r"
	pad := func(b []byte, i int64) []byte {
		const hexd = "0123456789abcdef"
		x := mix(uint64(i))
		for j := 0; j < c.Pad; j++ {
			b = append(b, hexd[(x>>(4*(j%16)))&15])
			if j%16 == 15 {
				x = mix(x)
			}
		}
		return b
	}
	row := func(b []byte, i int64) []byte {
		b = append(b, `{"k":`...)
		b = strconv.AppendInt(b, i, 10)
		b = append(b, `,"pad":"`...)
		b = pad(b, i)
		return append(b, `"}`...)
	}
	key := func(i int64) []byte { return strconv.AppendInt(nil, i, 10) }
	viewSQL := fmt.Sprintf("CREATE MATERIALIZED VIEW %s AS SELECT k, count(*) AS n, max(pad) AS top FROM %s GROUP BY k", view, in)
	h.header("recovery",
		fmt.Sprintf("workload: CREATE STREAM %s (k BIGINT, pad TEXT) WITH (partitions = %d, key = 'k'), %s rows by franz-go (keyed), every k distinct, pad %d bytes;",
			in, c.Partitions, Count(float64(c.Keys)), c.Pad),
		"  "+viewSQL+" caught up and FLUSHed; then, for each mode, the server is killed with SIGKILL and restarted:",
		"  kept   on the same data directory (Pebble state and the view's local copy kept)",
		"  wiped  on an emptied data directory (state rebuilt from the compacted _fvsql-r.<incarnation>-s0-state topic, the view copy from its table topic; the catalog from _fvsql_catalog)",
		"  graceful (a control, no target) stopped cleanly instead of killed, data directory kept: its consumers leave their groups, so the new ones need not wait for the old members' session timeout",
		"  right after the restart a fresh key is produced into every partition; ready = pgwire accepting, the pipeline RUNNING with restoring = 0 and",
		"  every partition owned, and every fresh key's row visible to SELECT n FROM r WHERE k = $1 (polled every 20 ms)",
	)
	if _, err := h.createStream(ctx, streamSpec{name: in, columns: "(k BIGINT, pad TEXT)", partitions: c.Partitions,
		key: "k", keyOf: key, rows: c.Keys, row: row}); err != nil {
		return err
	}
	built, _, err := h.buildView(ctx, viewSQL, view, c.Keys, c.Keys, c.CatchupTimeout)
	if err != nil {
		return err
	}
	st0, err := pipelineStat(ctx, h.conn, view)
	if err != nil {
		return err
	}
	stateTopic := stateTopicOf(ctx, h, view, "s0")
	stateRecords := topicRecords(ctx, h, stateTopic)
	dirBytes := dirSize(dataDir)
	fmt.Fprintf(h.o.Out, "state built in %s (%s rows/s): state_bytes %s, checkpoint_bytes of the last epoch %s, %s records in %s, server data dir %s\n\n",
		Secs(built), Count(Rate(c.Keys, built)), MiB(st0.StateBytes), MiB(st0.CheckpointBytes), Count(float64(stateRecords)), stateTopic, MiB(dirBytes))

	var results []*recoveryResult
	next := c.Keys // fresh keys: c.Keys, c.Keys+1, …
	total := c.Keys
	for _, mode := range c.Modes {
		before := dirSize(dataDir)
		if err := h.stopServer(mode != "graceful"); err != nil {
			return fmt.Errorf("%s stop: %w", mode, err)
		}
		if mode == "wiped" {
			if err := os.RemoveAll(dataDir); err != nil {
				return err
			}
		}
		res := &recoveryResult{mode: mode, owned: -1, dataBefore: before}
		start := time.Now()
		if err := h.launch(ctx, spec); err != nil {
			return fmt.Errorf("%s: restart: %w", mode, err)
		}
		res.accept = time.Since(start)
		if err := h.connect(ctx); err != nil {
			return err
		}
		// A fresh key into every partition.
		fresh := freshKeys(&next, c.Partitions)
		total += int64(len(fresh))
		if err := produceKeyed(ctx, h.srv.Brokers(), h.prefix+in, fresh, row, key); err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		if err := waitReady(ctx, h.conn, view, fresh, c, start, res); err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		res.dataAfter = dirSize(dataDir)
		if err := flush(ctx, h.conn, 5*time.Minute); err != nil {
			return err
		}
		got, err := queryInts(ctx, h.conn, "SELECT count(*), sum(n) FROM "+view)
		if err != nil {
			return err
		}
		if len(got) != 2 || got[0] != total || got[1] != total {
			res.check = fmt.Sprintf("OUTPUT CHECK FAILED: %s: SELECT count(*), sum(n) FROM %s returned %v, want [%d %d] (every key once)", mode, view, got, total, total)
			fmt.Fprintln(os.Stderr, "bench:", res.check)
		}
		results = append(results, res)
	}

	tb := Table{
		Title:  fmt.Sprintf("recovery: kill -9 and restart with %s keys of state", Count(float64(c.Keys))),
		Header: []string{"mode", "pgwire accepting", "partitions owned", "fresh rows visible", "ready", "restored_keys", "data dir before", "data dir after", "target"},
	}
	var notes []string
	for _, res := range results {
		v := "-"
		switch res.mode {
		case "kept":
			v = verdict(res.ready < RecoveryKeptTarget) + " (< " + RecoveryKeptTarget.String() + ")"
		case "wiped":
			v = verdict(res.ready < RecoveryWipedTarget) + " (< " + RecoveryWipedTarget.String() + ")"
		}
		if res.check != "" {
			v = "OUTPUT WRONG: see notes"
			notes = append(notes, res.check)
		}
		owned := "-"
		if res.owned >= 0 {
			owned = Secs(res.owned)
		}
		tb.Add(res.mode, Secs(res.accept), owned, Secs(res.visible), Secs(res.ready), Count(float64(res.stat.RestoredKeys)),
			MiB(res.dataBefore), MiB(res.dataAfter), v)
	}
	tb.Notes = append([]string{
		"times from the start of the new server process: pgwire accepting = the child's hello (server open, catalog replayed, listening); partitions owned = the pipeline's record first showed every input partition assigned",
		"fresh rows visible = a lookup of each fresh key returned its row (the pipeline restored the partition's state, processed the row, committed, and the view's local copy applied it)",
		"ready = fresh rows visible and the record shows RUNNING, restoring 0 and every partition owned",
		"restored_keys = state keys this server rebuilt from the state topic (0: local Pebble state reused)",
		fmt.Sprintf("targets: kept < %s, wiped < %s (graceful is a control without a target)", RecoveryKeptTarget, RecoveryWipedTarget),
	}, notes...)
	tb.Print(h.o.Out)
	return nil
}

// freshKeys returns keys from *next on, one landing in each partition.
func freshKeys(next *int64, partitions int) []int64 {
	out := make([]int64, partitions)
	have := 0
	filled := make([]bool, partitions)
	for have < partitions {
		k := *next
		*next++
		p := partitionOf(strconv.AppendInt(nil, k, 10), partitions)
		if filled[p] {
			continue // skipped: fresh keys stay distinct
		}
		filled[p] = true
		out[p] = k
		have++
	}
	return out
}

// produceKeyed writes the rows of the given ids (keyed) and waits for them.
func produceKeyed(ctx context.Context, brokers []string, topic string, ids []int64, row func([]byte, int64) []byte, key func(int64) []byte) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(ids))
	for i, id := range ids {
		recs[i] = &kgo.Record{Key: key(id), Value: row(nil, id)}
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return cl.ProduceSync(pctx, recs...).FirstErr()
}

// waitReady polls the pipeline's record and the fresh keys' rows.
func waitReady(ctx context.Context, conn *pgx.Conn, view string, fresh []int64, c RecoveryConfig, start time.Time, res *recoveryResult) error {
	ctx, cancel := context.WithTimeout(ctx, c.ReadyTimeout)
	defer cancel()
	pending := map[int64]bool{}
	for _, k := range fresh {
		pending[k] = true
	}
	q := "SELECT n FROM " + view + " WHERE k = $1"
	var last pipeStat
	for {
		st, err := pipelineStat(ctx, conn, view)
		if err == nil {
			last = st
			if res.owned < 0 && st.Partitions >= int64(c.Partitions) {
				res.owned = time.Since(start)
			}
		}
		for k := range pending {
			var n int64
			qctx, qcancel := context.WithTimeout(ctx, 10*time.Second)
			err := conn.QueryRow(qctx, q, k).Scan(&n)
			qcancel()
			if err == nil {
				delete(pending, k)
			} else if !errors.Is(err, pgx.ErrNoRows) && ctx.Err() == nil {
				return fmt.Errorf("%s ($1 = %d): %w", q, k, err)
			}
		}
		if len(pending) == 0 && res.visible == 0 {
			res.visible = time.Since(start)
		}
		if res.visible > 0 && last.Status == "RUNNING" && last.Restoring == 0 && last.Partitions >= int64(c.Partitions) {
			res.ready = time.Since(start)
			res.stat = last
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready within %s: %d fresh keys not visible; pipeline: %s", c.ReadyTimeout, len(pending), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// topicRecords is the number of offsets in a topic (the sum of its
// partitions' end minus start offsets), -1 when unknown.
// stateTopicOf finds the state topic of a pipeline's stage,
// _fvsql-<pipeline>.<incarnation>-<stage>-state (the engine's names
// carry the pipeline's incarnation), by listing the topics.
func stateTopicOf(ctx context.Context, h *harness, pipeline, stage string) string {
	plain := h.prefix + "_fvsql-" + pipeline + "-" + stage + "-state"
	adm, err := h.admin()
	if err != nil {
		return plain
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	topics, err := adm.ListTopics(qctx)
	if err != nil {
		return plain
	}
	head, tail := h.prefix+"_fvsql-"+pipeline+".", "-"+stage+"-state"
	for _, t := range topics.Names() {
		if rest, ok := strings.CutPrefix(t, head); ok && strings.HasSuffix(rest, tail) && len(rest) == 8+len(tail) {
			return t
		}
	}
	return plain
}

func topicRecords(ctx context.Context, h *harness, topic string) int64 {
	adm, err := h.admin()
	if err != nil {
		return -1
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(qctx, topic)
	if err != nil {
		return -1
	}
	starts, err := adm.ListStartOffsets(qctx, topic)
	if err != nil {
		return -1
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) {
		s := int64(0)
		if st, ok := starts.Lookup(o.Topic, o.Partition); ok {
			s = st.Offset
		}
		n += o.Offset - s
	})
	return n
}

// dirSize is the bytes of the files under dir (0 when it does not exist).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
