package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeStat is one pipeline's row of fvsql_catalog.pipelines (SHOW
// PIPELINES). Columns are read by name, so a server with more or fewer
// columns still answers; a column it lacks reads -1.
type pipeStat struct {
	Found                         bool
	Status                        string
	Consumed, Emitted, Dropped    int64
	Late, Lag                     int64 // Lag -1: unknown (NULL)
	Partitions, Restoring, Epochs int64
	CheckpointBytes, RestoredKeys int64
	StateBytes                    int64
	Error                         string
}

func (p pipeStat) String() string {
	if !p.Found {
		return "not in fvsql_catalog.pipelines"
	}
	s := fmt.Sprintf("status %s consumed %d emitted %d dropped %d late %d lag %d partitions %d restoring %d restored_keys %d",
		p.Status, p.Consumed, p.Emitted, p.Dropped, p.Late, p.Lag, p.Partitions, p.Restoring, p.RestoredKeys)
	if p.Error != "" {
		s += " error " + p.Error
	}
	return s
}

// pipelineStat reads a pipeline's record.
func pipelineStat(ctx context.Context, conn *pgx.Conn, name string) (pipeStat, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p := pipeStat{Lag: -1, Partitions: -1, Restoring: -1, Epochs: -1, CheckpointBytes: -1, RestoredKeys: -1, StateBytes: -1}
	rows, err := conn.Query(ctx, "SELECT * FROM fvsql_catalog.pipelines WHERE name = '"+strings.ReplaceAll(name, "'", "''")+"'")
	if err != nil {
		return p, err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return p, err
		}
		p.Found = true
		for i, fd := range fds {
			v := vals[i]
			n := int64(-1)
			if v != nil {
				if x, err := asInt64(v); err == nil {
					n = x
				}
			}
			switch fd.Name {
			case "status":
				p.Status, _ = v.(string)
			case "error":
				p.Error, _ = v.(string)
			case "consumed":
				p.Consumed = n
			case "emitted":
				p.Emitted = n
			case "dropped":
				p.Dropped = n
			case "late":
				p.Late = n
			case "lag":
				p.Lag = n
			case "partitions":
				p.Partitions = n
			case "restoring":
				p.Restoring = n
			case "epochs":
				p.Epochs = n
			case "checkpoint_bytes":
				p.CheckpointBytes = n
			case "restored_keys":
				p.RestoredKeys = n
			case "state_bytes":
				p.StateBytes = n
			}
		}
	}
	return p, rows.Err()
}

// waitPipeline polls a pipeline's record every 50 ms until it has
// consumed want input rows (committed epochs of its first stage) and,
// when drained, its lag over every stage is 0 (the later stages have
// committed what the first one wrote). It returns the last record.
func waitPipeline(ctx context.Context, conn *pgx.Conn, name string, want int64, drained bool, timeout time.Duration) (pipeStat, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last pipeStat
	for {
		p, err := pipelineStat(ctx, conn, name)
		if err != nil && ctx.Err() == nil {
			return last, fmt.Errorf("polling fvsql_catalog.pipelines: %w (last: %s)", err, last)
		}
		if err == nil {
			last = p
			if p.Consumed >= want && (!drained || p.Lag == 0) {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("pipeline %s did not catch up within %s: %s (want consumed %d)", name, timeout, last, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// flush runs FLUSH within d, again while it times out on the server
// (which bounds one FLUSH by 2 minutes: SQLSTATE 57014).
func flush(ctx context.Context, conn *pgx.Conn, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		_, err := conn.Exec(ctx, "FLUSH", pgx.QueryExecModeSimpleProtocol)
		var pe *pgconn.PgError
		if err == nil || ctx.Err() != nil || !errors.As(err, &pe) || pe.Code != "57014" {
			if err != nil {
				return fmt.Errorf("FLUSH: %w", err)
			}
			return nil
		}
	}
}

// queryInts runs a one-row query whose columns are integers (count, sum
// of bigints as numeric, …), with NULL as 0.
func queryInts(ctx context.Context, conn *pgx.Conn, q string) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
		for _, v := range vals {
			n, err := asInt64(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", q, err)
			}
			out = append(out, n)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	return out, nil
}
