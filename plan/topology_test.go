package plan

import (
	"strings"
	"testing"
)

// TestTopologyVersionValidate: a topology of the current layout or of
// none (stored before versions were kept) is valid; a newer one is
// refused with a message that says so.
func TestTopologyVersionValidate(t *testing.T) {
	stages := []Stage{{Name: "s0", Inputs: []string{"in"}, Output: "out", Steps: []Step{{Op: OpFilter}}}}
	for _, v := range []int{0, Version} {
		if err := (&Topology{Version: v, Stages: stages}).Validate(); err != nil {
			t.Errorf("version %d: %v", v, err)
		}
	}
	err := (&Topology{Version: Version + 1, Stages: stages}).Validate()
	if err == nil || !strings.Contains(err.Error(), "newer than this fvsql") {
		t.Fatalf("version %d: %v, want the newer-version error", Version+1, err)
	}
}
