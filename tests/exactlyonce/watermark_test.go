package exactlyonce

import (
	"testing"
	"time"
)

// TestRepartitionFirstWatermarks: w2 (windows behind a repartition stage)
// is created over an input that already holds its rows in all 8
// partitions, event time in step across partitions, with no warm-up: no
// row may come late (every window exact, w2_errors empty). The crash
// tests flush one row per partition first, which hides what this test
// looks at: the first watermarks the repartition stage sends.
//
// A regression test: rows used to be dropped as late (60395 of 100000 on
// the embedded broker, 10856 on the real one) because the stage's
// watermark was the minimum over the upstream partitions that had
// reported one so far. The stage now holds its watermark until every
// upstream partition reported (or the idle timeout passed).
func TestRepartitionFirstWatermarks(t *testing.T) {
	eachBroker(t, func(t *testing.T, c *cluster) {
		sd := seed(t)
		d := genData(sd, envInt(t, "FVSQL_EO_WM_ROWS", 100_000), 300)
		a := c.start(t, "a")
		conn := connect(t, a)
		exec(t, conn, inputDDL)
		prod := startProducer(t, c, c.topic(inputStream), d.recs)
		prod.release(len(d.recs))
		prod.wait(t, 5*time.Minute)
		exec(t, conn, w2DDL)
		flush(t, a, 3)
		checkAll(t, c, d, conn, "w2")
	})
}
