package file_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fvsql/fvsql/backends"
	"github.com/fvsql/fvsql/pgerror"
)

// The helper process: FVSQL_FILE_HELPER=hold|write DIR. "hold" writes one
// message, says "ready" and keeps the file's writer until stdin closes;
// "write" sends batches of 100 forever, printing "acked N" after each Send
// returns.
func TestMain(m *testing.M) {
	if mode := os.Getenv("FVSQL_FILE_HELPER"); mode != "" {
		helper(mode, os.Getenv("FVSQL_FILE_DIR"))
		return
	}
	os.Exit(m.Run())
}

func helper(mode, dir string) {
	ctx := context.Background()
	st, err := backends.Open(ctx, "file://"+dir+"/", backends.Env{FileRoot: dir})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	p, _ := st.Producer(ctx)
	switch mode {
	case "hold":
		if err := p.Send(ctx, []backends.Message{{Stream: "x.log", Payload: []byte("held")}}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
	case "write":
		n := 0
		for {
			var batch []backends.Message
			for range 100 {
				batch = append(batch, backends.Message{Stream: "x.log", Payload: fmt.Appendf(nil, "%08d%s", n, strings.Repeat("z", 300))})
				n++
			}
			if err := p.Send(ctx, batch); err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			fmt.Println("acked", n)
		}
	}
	st.Close()
}

func startHelper(t *testing.T, mode, dir string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FVSQL_FILE_HELPER="+mode, "FVSQL_FILE_DIR="+dir)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, in, bufio.NewScanner(out)
}

func TestOneWriterProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, in, out := startHelper(t, "hold", dir)
	if !out.Scan() || out.Text() != "ready" {
		t.Fatalf("helper: %q %v", out.Text(), out.Err())
	}
	st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	err := sendErr(st, "x.log")
	if code(err) != pgerror.ObjectNotInPrerequisiteState.String() {
		t.Fatalf("Send while another process writes: %v (code %q), want 55000", err, code(err))
	}
	// Reading is fine meanwhile.
	if got := readAll(t, st, "x.log"); len(got) != 1 || string(got[0].Payload) != "held" {
		t.Fatalf("reading while another process writes: %v", got)
	}
	in.Close()
	cmd.Wait()
	if err := sendErr(st, "x.log"); err != nil {
		t.Fatalf("Send once the other writer exited: %v", err)
	}
}

// TestKillWriter kills a writing process (SIGKILL, mid-Send) while this
// process follows the file: every acknowledged batch is there, the log is
// a gapless prefix, the follower saw exactly that prefix in order, and a
// new writer appends after it.
func TestKillWriter(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st := openURI(t, "file://"+dir+"/", backends.Env{FileRoot: dir})
	if err := st.CreateStream(ctx, backends.StreamSpec{Name: "x.log"}); err != nil {
		t.Fatal(err)
	}
	follower, err := st.Consumer(ctx, "x.log", backends.ConsumerOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer follower.Close()
	cmd, _, out := startHelper(t, "write", dir)
	acked := 0
	deadline := time.Now().Add(400 * time.Millisecond)
	for out.Scan() && time.Now().Before(deadline) {
		f := strings.Fields(out.Text())
		if len(f) != 2 || f[0] != "acked" {
			t.Fatalf("helper: %q", out.Text())
		}
		acked, _ = strconv.Atoi(f[1])
	}
	cmd.Process.Signal(syscall.SIGKILL)
	for out.Scan() { // acknowledgements already printed still count
		if f := strings.Fields(out.Text()); len(f) == 2 && f[0] == "acked" {
			acked, _ = strconv.Atoi(f[1])
		}
	}
	cmd.Wait()
	if acked == 0 {
		t.Fatal("the writer acknowledged nothing")
	}
	got := scan(t, st, "x.log")
	if len(got) < acked {
		t.Fatalf("%d messages after the kill, %d were acknowledged", len(got), acked)
	}
	for i, m := range got {
		if m.Sequence != int64(i) || string(m.Payload[:8]) != fmt.Sprintf("%08d", i) {
			t.Fatalf("message %d: seq %d payload %.8q", i, m.Sequence, m.Payload)
		}
	}
	seen := 0
	for seen < len(got) {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		msgs, err := follower.Read(tctx, 10000)
		cancel()
		if err != nil {
			t.Fatalf("follower after %d of %d: %v", seen, len(got), err)
		}
		for _, m := range msgs {
			if m.Sequence != int64(seen) {
				t.Fatalf("follower: message %d has sequence %d", seen, m.Sequence)
			}
			seen++
		}
	}
	if err := sendErr(st, "x.log"); err != nil {
		t.Fatalf("Send after the kill: %v", err)
	}
	if again := scan(t, st, "x.log"); len(again) != len(got)+1 || again[len(got)].Sequence != int64(len(got)) {
		t.Fatalf("after appending: %d messages", len(again))
	}
	t.Logf("writer killed after %d acknowledged messages; %d in the log", acked, len(got))
}
