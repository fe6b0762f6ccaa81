package clients

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
	"github.com/jackc/pgx/v5"
)

// TestSessionFunctions: current_user and session_user name the user that
// logged in (two connections, two users), current_setting and set_config
// read and change the session's settings as SHOW and SET do (and only that
// session's), and a name column compares with a varchar parameter, as
// pgjdbc binds strings.
func TestSessionFunctions(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{})
	p.Connect(t) // waits until the server accepts connections
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(user string) *pgx.Conn {
		t.Helper()
		conn, err := pgx.Connect(ctx, strings.Replace(p.DSN(), "postgres://fvsql@", "postgres://"+user+"@", 1)+"&application_name="+user+"-app")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	alice, bob := connect("alice"), connect("bob")
	startApp := "alice-app" // the startup parameter
	if got := one0(t, ctx, alice, "SELECT current_setting('application_name')"); got != startApp {
		t.Fatalf("application_name from the startup packet = %q", got)
	}
	one := func(conn *pgx.Conn, q string, args ...any) string {
		t.Helper()
		var s *string
		if err := conn.QueryRow(ctx, q, args...).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if s == nil {
			return "NULL"
		}
		return *s
	}
	for conn, want := range map[*pgx.Conn]string{alice: "alice", bob: "bob"} {
		for _, f := range []string{"current_user", "session_user", "user", "current_role"} {
			if got := one(conn, "SELECT "+f+"::text"); got != want {
				t.Errorf("%s as %s = %q", f, want, got)
			}
		}
	}
	if got := one(alice, "SELECT set_config('application_name', 'dash', false)"); got != "dash" {
		t.Errorf("set_config returned %q, want dash", got)
	}
	var shown string
	if err := alice.QueryRow(ctx, "SHOW application_name").Scan(&shown); err != nil || shown != "dash" {
		t.Errorf("SHOW after set_config: %q %v", shown, err)
	}
	if got := one(alice, "SELECT current_setting('application_name')"); got != "dash" {
		t.Errorf("current_setting after set_config: %q", got)
	}
	if got := one(bob, "SELECT current_setting('application_name')"); got == "dash" {
		t.Errorf("set_config in one session changed another's setting")
	}
	if got := one(alice, "SELECT current_setting('no_such.setting', true)"); got != "NULL" {
		t.Errorf("current_setting(missing, true) = %q, want NULL", got)
	}
	if _, err := alice.Exec(ctx, "SELECT current_setting('no_such_setting')"); err == nil || !strings.Contains(err.Error(), "42704") {
		t.Errorf("current_setting of an unknown setting: %v, want 42704", err)
	}
	// set_config of statement_timeout is enforced like SET.
	if got := one(alice, "SELECT set_config('statement_timeout', '1500', false)"); got != "1500ms" {
		t.Errorf("set_config(statement_timeout) = %q", got)
	}
	// RESET ALL (asyncpg's pool reset sends it) and RESET name restore
	// what the session started with: startup parameters included.
	if _, err := alice.Exec(ctx, "SET extra_float_digits = 3"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Exec(ctx, "SELECT set_config('my.custom', 'x', false)"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Exec(ctx, "RESET ALL"); err != nil {
		t.Fatalf("RESET ALL: %v", err)
	}
	for name, want := range map[string]string{"statement_timeout": "0", "extra_float_digits": "1", "application_name": startApp} {
		if got := one(alice, "SELECT current_setting('"+name+"')"); got != want {
			t.Errorf("%s after RESET ALL = %q, want %q", name, got, want)
		}
	}
	if got := one(alice, "SELECT current_setting('my.custom', true)"); got != "NULL" {
		t.Errorf("a custom setting after RESET ALL = %q, want none", got)
	}
	if _, err := alice.Exec(ctx, "SET application_name = 'other'"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Exec(ctx, "RESET application_name"); err != nil {
		t.Fatal(err)
	}
	if got := one(alice, "SELECT current_setting('application_name')"); got != startApp {
		t.Errorf("application_name after RESET = %q, want the startup value %q", got, startApp)
	}
	// asyncpg's pool reset, as it sends it: one simple query.
	if _, err := alice.Exec(ctx, "SELECT pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL;", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Errorf("asyncpg's reset query: %v", err)
	}
	if _, err := alice.Exec(ctx, "LISTEN ch"); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Errorf("LISTEN: %v, want 0A000 (not built)", err)
	}
	// A varchar parameter against a name column (pgjdbc's getTables binds
	// its patterns so).
	if got := one(alice, "SELECT nspname::text FROM pg_namespace WHERE nspname = $1::varchar", "public"); got != "public" {
		t.Errorf("name = varchar parameter: %q", got)
	}
}

func one0(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(ctx, q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// pg_roles lists every user of --users, logged in or not (DBeaver's Roles
// node, has_*_privilege lookups by name), besides the default fvsql.
func TestRolesOfUsers(t *testing.T) {
	p := fvsqltest.Start(t, fvsqltest.Config{User: "alice", Password: "a-secret",
		Args: []string{"--auth", "scram-sha-256", "--users", "alice:a-secret,bob:b-secret"}})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT rolname::text FROM pg_roles WHERE rolname IN ('alice', 'bob', 'carol') ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(names, ",") != "alice,bob" {
		t.Errorf("pg_roles of alice, bob (not logged in) and carol (no user): %v %v", names, err)
	}
}
