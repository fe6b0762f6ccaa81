package pgerror

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestCodeOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		want Code
	}{
		{nil, SuccessfulCompletion},
		{New(UndefinedTable, "no %s", "t"), UndefinedTable},
		{fmt.Errorf("planning: %w", New(SyntaxError, "x")), SyntaxError},
		{Wrap(New(DivisionByZero, "x"), IOError, "outer"), DivisionByZero},
		{Wrap(errors.New("disk"), IOError, "read"), IOError},
		{fmt.Errorf("poll: %w", context.Canceled), QueryCanceled},
		{errors.New("plain"), Internal},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if !errors.Is(fmt.Errorf("w: %w", New(UndefinedTable, "a")), New(UndefinedTable, "b")) {
		t.Error("errors.Is does not match two errors of one code")
	}
	if errors.Is(New(UndefinedTable, "a"), New(UndefinedColumn, "a")) {
		t.Error("errors.Is matches errors of different codes")
	}
}
