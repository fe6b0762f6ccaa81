package pipelines

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestEmbeddedKafkaRequiresSASL: with a password method on pgwire, the
// embedded broker's Kafka listener requires SASL with the same users. A
// client without credentials (or with a wrong password) can neither read
// nor write a stream's topic, nor forge the catalog; the same user and
// password as SQL's work with SCRAM and PLAIN; fvsql's own pipelines keep
// running (its clients use an internal user), also after a restart.
func TestEmbeddedKafkaRequiresSASL(t *testing.T) {
	t.Setenv("PGPASSWORD", "s3cret") // the DSN's user fvsql, for pgx
	srv := fvsqltest.Start(t, fvsqltest.Config{Name: "fvsql",
		Args: append(append([]string{}, serverArgs...), "--auth", "scram-sha-256", "--users", "fvsql:s3cret,other:pw2")})
	conn := srv.Connect(t)
	exec(t, conn, "CREATE STREAM ain (k BIGINT) WITH (partitions = 2)")
	exec(t, conn, "CREATE STREAM aout AS SELECT k * 2 AS k2 FROM ain")
	exec(t, conn, "INSERT INTO ain VALUES (1), (2)")
	flush(t, srv, conn)
	if got := queryStrings(t, conn, "SELECT k2 FROM aout ORDER BY k2"); got != "2 4" {
		t.Fatalf("aout = %q before any outside client, want 2 4", got)
	}

	try := func(name string, opts ...kgo.Opt) error {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(srv.KafkaBrokers()), kgo.RequestRetries(0),
			kgo.RecordRetries(1), kgo.DialTimeout(2 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: "ain", Value: []byte(`{"k":10}`)}).FirstErr()
		t.Logf("%s: produce: %v", name, err)
		return err
	}
	if err := try("no credentials"); err == nil {
		t.Fatal("a client without SASL produced into a stream's topic")
	}
	if err := try("wrong password", kgo.SASL(scram.Auth{User: "fvsql", Pass: "nope"}.AsSha256Mechanism())); err == nil {
		t.Fatal("a client with a wrong password produced")
	}
	// A forged catalog record through an unauthenticated client.
	func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaBrokers()), kgo.RequestRetries(0), kgo.RecordRetries(1))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "_fvsql_catalog", Key: []byte("ain")}).FirstErr(); err == nil {
			t.Fatal("an unauthenticated client dropped a relation by producing a tombstone to the catalog")
		}
	}()
	for _, c := range []struct {
		name string
		opt  kgo.Opt
	}{
		{"SCRAM-SHA-256", kgo.SASL(scram.Auth{User: "fvsql", Pass: "s3cret"}.AsSha256Mechanism())},
		{"SCRAM-SHA-512", kgo.SASL(scram.Auth{User: "other", Pass: "pw2"}.AsSha512Mechanism())},
		{"PLAIN", kgo.SASL(plain.Auth{User: "fvsql", Pass: "s3cret"}.AsMechanism())},
	} {
		if err := try(c.name, c.opt); err != nil {
			t.Fatalf("%s with a pgwire user's password: %v", c.name, err)
		}
	}
	flush(t, srv, conn)
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM aout WHERE k2 = 20"); got != "3" {
		t.Errorf("the three authenticated rows (k = 10) in aout: %q, want 3", got)
	}
	// A stream and a sink over a kafka:// URI that carries the password:
	// they authenticate with it, and the password is masked wherever the
	// URI is shown (SHOW, the catalog, pg_foreign_server, reloptions).
	uri := "kafka://fvsql:s3cret@" + srv.KafkaBrokers()
	masked := "kafka://fvsql:xxxxx@" + srv.KafkaBrokers()
	exec(t, conn, "CREATE STREAM kuri (a BIGINT) WITH (backend = '"+uri+"', topic = 'kuri')")
	exec(t, conn, "INSERT INTO kuri VALUES (7)")
	if got := queryStrings(t, conn, "SELECT a::text FROM kuri"); got != "7" {
		t.Fatalf("kuri over %s = %q, want 7", masked, got)
	}
	exec(t, conn, "CREATE SINK kurisink AS SELECT k FROM ain WITH (backend = '"+uri+"', topic = 'kurisink')")
	for q, want := range map[string]string{
		"SELECT backend FROM fvsql_catalog.streams WHERE name IN ('kuri', 'kurisink') ORDER BY name":       masked + " " + masked,
		"SELECT count(*)::text FROM fvsql_catalog.streams WHERE backend LIKE '%s3cret%'":                   "0",
		"SELECT count(*)::text FROM pg_foreign_server WHERE srvname = '" + masked + "'":                    "1",
		"SELECT count(*)::text FROM pg_foreign_server WHERE srvname LIKE '%s3cret%'":                       "0",
		"SELECT count(*)::text FROM pg_class WHERE array_to_string(reloptions, ',') LIKE '%s3cret%'":       "0",
		"SELECT count(*)::text FROM pg_class WHERE array_to_string(reloptions, ',') LIKE '%fvsql:xxxxx@%'": "1",
	} {
		if got := queryStrings(t, conn, q); got != want {
			t.Errorf("%s = %q, want %q", q, got, want)
		}
	}
	for _, show := range []string{"SHOW STREAMS", "SHOW SINKS"} {
		if got := showAll(t, conn, show); strings.Contains(got, "s3cret") || !strings.Contains(got, masked) {
			t.Errorf("%s shows %q: want %s and no password", show, got, masked)
		}
	}
	exec(t, conn, "DROP SINK kurisink")
	exec(t, conn, "DROP STREAM kuri")

	// A restart reseeds the broker's users: the pipeline and SQL go on.
	srv.Stop(t)
	srv.Restart(t)
	conn = srv.Connect(t)
	exec(t, conn, "INSERT INTO ain VALUES (5)")
	flush(t, srv, conn)
	if got := queryStrings(t, conn, "SELECT count(*)::text FROM aout WHERE k2 = 10"); got != "1" {
		t.Errorf("after a restart, aout holds %q rows of k = 5, want 1", got)
	}
	if err := try("no credentials after the restart"); err == nil {
		t.Fatal("after a restart, a client without SASL produced")
	}
}

// showAll runs q and prints every value of every row.
func showAll(t *testing.T, conn *pgx.Conn, q string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), sqlTimeout)
	defer cancel()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, "\n")
}
