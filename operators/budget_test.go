package operators

import (
	"context"
	"testing"

	"github.com/fvsql/fvsql/pgerror"
)

// TestAccount: an account charges its budget as it grows, gives back
// what it releases, and on Close everything it still holds, so the
// budget's other holders keep theirs; past the limit Grow fails with
// 53200.
func TestAccount(t *testing.T) {
	b := NewBudget(context.Background(), 1000, "test_limit")
	if err := b.Grow(100); err != nil { // another holder's
		t.Fatal(err)
	}
	a := b.Account()
	for _, n := range []int64{300, 200, 50} {
		if err := a.Grow(n); err != nil {
			t.Fatal(err)
		}
	}
	a.Release(200)
	if b.Used() != 450 {
		t.Fatalf("used %d after 100 + 550 - 200, want 450", b.Used())
	}
	if err := a.Grow(600); pgerror.CodeOf(err) != pgerror.OutOfMemory {
		t.Fatalf("past the limit: %v, want 53200", err)
	}
	a.Close()
	if b.Used() != 100 {
		t.Fatalf("used %d after Close, want the other holder's 100", b.Used())
	}
	var none *Budget // a query without a budget
	acct := none.Account()
	if err := acct.Grow(1 << 40); err != nil {
		t.Fatal(err)
	}
	acct.Close()
}
