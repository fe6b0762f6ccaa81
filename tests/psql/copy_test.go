package psql

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

// TestCopyInPsql runs psql's \copy both ways against fvsql (a CSV file
// with a header in, a query out), a bad file (nothing lands, psql shows
// the line), and COPY (SUBSCRIBE TO v) TO STDOUT, which prints a view's
// rows as they change until psql is interrupted (^C: a CancelRequest).
func TestCopyInPsql(t *testing.T) {
	psqlBin := psqlPath(t)
	p := fvsqltest.Start(t, fvsqltest.Config{})
	conn := p.Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, stmt := range []string{
		"CREATE STREAM items (id BIGINT, name TEXT, price DOUBLE PRECISION) WITH (key = 'name')",
		"CREATE MATERIALIZED VIEW per_name AS SELECT name, count(*) AS n FROM items GROUP BY name",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	host, port, _ := strings.Cut(p.Addr(), ":")
	cmd := func(command string) *exec.Cmd {
		c := exec.Command(psqlBin, "-h", host, "-p", port, "-U", "fvsql", "-d", "fvsql", "-X", "-v", "ON_ERROR_STOP=1", "-c", command)
		c.Env = append(os.Environ(), "PAGER=", "PSQL_PAGER=")
		return c
	}
	run := func(command string) (string, string, error) {
		c := cmd(command)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		return out.String(), errOut.String(), err
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "items.csv")
	if err := os.WriteFile(good, []byte("id,name,price\n1,apple,1.5\n2,\"pear, green\",2\n3,\"say \"\"cheese\"\"\",\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(`\copy items from '` + good + `' csv header`)
	if err != nil || strings.TrimSpace(out) != "COPY 3" {
		t.Fatalf("\\copy from a file: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = run(`\copy (select id, name, price from items order by id) to stdout`)
	if want := "1\tapple\t1.5\n2\tpear, green\t2\n3\tsay \"cheese\"\t\\N\n"; err != nil || out != want {
		t.Fatalf("\\copy to stdout: %v\n%q\nwant %q\n%s", err, out, want, errOut)
	}
	out, errOut, err = run(`\copy (select id, name from items order by id) to stdout with csv header force quote name`)
	if want := "id,name\n1,\"apple\"\n2,\"pear, green\"\n3,\"say \"\"cheese\"\"\"\n"; err != nil || out != want {
		t.Fatalf("\\copy to stdout csv: %v\n%q\nwant %q\n%s", err, out, want, errOut)
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("id,name,price\n4,plum,1\n5,fig,cheap\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = run(`\copy items from '` + bad + `' csv header`)
	if err == nil || !strings.Contains(errOut, `invalid input syntax for type double precision: "cheap"`) ||
		!strings.Contains(errOut, `CONTEXT:  COPY items, line 3, column price: "cheap"`) {
		t.Fatalf("bad file: %v\n%s", err, errOut)
	}
	out, _, _ = run("SELECT count(*) FROM items")
	if !strings.Contains(out, "     3\n") {
		t.Fatalf("after the bad file:\n%s", out)
	}
	if _, errOut, err = run("COPY items TO '/tmp/items.out'"); err == nil || !strings.Contains(errOut, "pg_write_server_files") {
		t.Fatalf("COPY to a server file: %v\n%s", err, errOut)
	}

	// A live view in psql until ^C.
	sub := cmd("COPY (SUBSCRIBE TO per_name) TO STDOUT")
	stdout, err := sub.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var subErr bytes.Buffer
	sub.Stderr = &subErr
	if err := sub.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var got []string
	deadline := time.After(time.Minute)
	for i := 0; len(got) < 5; i++ {
		if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO items VALUES (%d, 'apple', 1)", 10+i)); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-lines:
			got = append(got, l)
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatalf("psql printed %q in a minute", got)
		}
	}
	if !strings.HasPrefix(got[0], "insert\t") {
		t.Errorf("first line %q, want a current row", got[0])
	}
	if err := sub.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		for range lines {
		}
		exited <- sub.Wait()
	}()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = sub.Process.Kill()
		t.Fatal("psql did not end after ^C")
	}
	if !strings.Contains(subErr.String(), "canceling statement due to user request") {
		t.Errorf("psql after ^C: %s", subErr.String())
	}
}
