package readme

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fvsql/fvsql/tests/fvsqltest"
)

func TestMain(m *testing.M) { os.Exit(fvsqltest.Main(m)) }

// walkthrough returns the ```sql blocks of the README's psql section.
func walkthrough(t *testing.T) []string {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "## Five minutes with psql")
	if start < 0 {
		t.Fatal("README has no \"Five minutes with psql\" section")
	}
	section := text[start+1:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		i := strings.Index(section, "```sql\n")
		if i < 0 {
			break
		}
		section = section[i+len("```sql\n"):]
		j := strings.Index(section, "```")
		if j < 0 {
			t.Fatal("unterminated sql block in the README")
		}
		blocks = append(blocks, section[:j])
		section = section[j+3:]
	}
	if len(blocks) < 2 {
		t.Fatalf("found %d sql blocks in the walkthrough, want at least 2", len(blocks))
	}
	return blocks
}

func TestREADMEWalkthroughInPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("psql is not installed")
		}
		t.Skip("psql is not installed")
	}
	p := fvsqltest.Start(t, fvsqltest.Config{})
	p.Connect(t).Close(t.Context())
	host, port, _ := strings.Cut(p.Addr(), ":")
	for i, block := range walkthrough(t) {
		cmd := exec.Command(psql, "-h", host, "-p", port, "-U", "fvsql", "-d", "fvsql", "-X", "-v", "ON_ERROR_STOP=1")
		cmd.Stdin = strings.NewReader(block)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil || strings.Contains(errOut.String(), "ERROR") {
			t.Fatalf("block %d failed in psql: %v\nstderr:\n%s\nstdout:\n%s", i+1, err, errOut.String(), out.String())
		}
		t.Logf("block %d:\n%s", i+1, out.String())
		// what the README promises the blocks show
		for _, want := range map[int][]string{
			0: {"ACME", "1050", "INIT", "495", "trades"},
			1: {"ANN", "300.0", "big_orders", "RUNNING", "division by zero"},
			2: {"250", "255", "275", "ann"},
			3: {"42 | 120.0", "1001 |  12.0 | blue", "1001 |  12.0 | red", "add2", "wasm"},
		}[i] {
			if !strings.Contains(out.String(), want) {
				t.Errorf("block %d output lacks %q", i+1, want)
			}
		}
	}
}
