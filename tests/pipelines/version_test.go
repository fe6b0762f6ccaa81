package pipelines

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/fvsql/fvsql/plan"
)

// TestTopologyVersion: a pipeline's topology is stored in the catalog
// with the layout version of the build that planned it, and a process
// refuses to run a topology of a newer layout (one a later release wrote
// into the shared catalog during a rolling upgrade) instead of running
// it wrong, while its other pipelines go on.
func TestTopologyVersion(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		a := c.start(t, "a")
		conn := a.Connect(t)
		exec(t, conn, "CREATE STREAM vsrc (k BIGINT, v BIGINT) WITH (partitions = 2)")
		exec(t, conn, "CREATE MATERIALIZED VIEW vver AS SELECT k, count(*) AS n FROM vsrc GROUP BY k")

		catalogTopic := c.topic("_fvsql_catalog")
		var stored map[string]json.RawMessage
		for _, r := range c.readCommitted(t, catalogTopic) {
			if string(r.Key) == "vver" && r.Value != nil {
				stored = nil
				if err := json.Unmarshal(r.Value, &stored); err != nil {
					t.Fatalf("catalog record of vver: %v", err)
				}
			}
		}
		if stored == nil {
			t.Fatalf("no catalog record of vver in %s", catalogTopic)
		}
		var topo plan.Topology
		if err := json.Unmarshal(stored["plan"], &topo); err != nil {
			t.Fatalf("vver's stored plan: %v\n%s", err, stored["plan"])
		}
		if topo.Version != plan.Version {
			t.Fatalf("vver's stored topology has version %d, want %d", topo.Version, plan.Version)
		}

		// A later release's pipeline: the same record under another name
		// and incarnation, its topology one version newer.
		topo.Version = plan.Version + 1
		topo.Incarnation = "future01"
		newer, err := json.Marshal(topo)
		if err != nil {
			t.Fatal(err)
		}
		stored["plan"] = newer
		stored["name"], _ = json.Marshal("vnext")
		stored["topic"], _ = json.Marshal("vnext")
		stored["id"], _ = json.Marshal("future01future01")
		value, err := json.Marshal(stored)
		if err != nil {
			t.Fatal(err)
		}
		produce(t, c.client(t), []*kgo.Record{{Topic: catalogTopic, Key: []byte("vnext"), Value: value}})

		deadline := time.Now().Add(30 * time.Second)
		for {
			refused := a.LogLines(func(l string) bool {
				return strings.Contains(l, "pipeline=vnext") && strings.Contains(l, "newer than this fvsql")
			})
			if len(refused) > 0 {
				t.Logf("refused: %s", refused[0])
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a did not refuse vnext's topology of version %d within 30 s", topo.Version)
			}
			time.Sleep(pollInterval)
		}
		if _, ok, err := stats(conn, "vnext"); err != nil || ok {
			t.Fatalf("vnext runs (listed: %v, err %v), though its topology is newer than the process", ok, err)
		}
		// vver goes on. (No FLUSH: it would wait for vnext, which only a
		// process of the later release runs.)
		exec(t, conn, "INSERT INTO vsrc VALUES (1, 1), (1, 2), (2, 3)")
		deadline = time.Now().Add(30 * time.Second)
		for {
			got := showAll(t, conn, "SELECT k, n FROM vver ORDER BY k")
			if got == "1 2\n2 1" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("vver after the refused pipeline: %q, want 1 2 / 2 1", got)
			}
			time.Sleep(pollInterval)
		}
	})
}
