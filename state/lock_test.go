package state

import (
	"errors"
	"strings"
	"testing"
)

// TestOpenInUse: a store another opener holds is refused as in use, not
// as damaged (whose hint is to move the directory aside).
func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Open(dir)
	if err == nil {
		t.Fatal("a second Open of a store in use succeeded")
	}
	if errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second Open: %v, want 'in use by another process'", err)
	}
}
