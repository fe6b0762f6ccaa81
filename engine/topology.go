package engine

import (
	"fmt"
	"strings"

	"github.com/fvsql/fvsql/operators"
	"github.com/fvsql/fvsql/types"
)

// Topology is a continuous query as stages; plain data, stored by the
// host (the catalog) as JSON.
type Topology struct {
	Stages []Stage `json:"stages"`
	// Internal lists the datasets the pipeline owns (repartition topics),
	// created when the pipeline starts and deleted when it is dropped.
	Internal []Stream `json:"internal,omitempty"`
	// Errors is the dataset poison rows are reported to.
	Errors string `json:"errors"`
}

// Stage reads its inputs, runs its steps per input partition, and writes
// to its output.
type Stage struct {
	Name   string           `json:"name"`
	Inputs []string         `json:"inputs"` // dataset names
	Output string           `json:"output"` // dataset name
	Steps  []operators.Step `json:"steps"`
}

// Stream is a topic and the schema of its JSON records.
type Stream struct {
	Name       string       `json:"name"`
	Topic      string       `json:"topic"`
	Columns    []string     `json:"columns"`
	Types      []types.Type `json:"types"`
	Partitions int          `json:"partitions"`
	Key        []int        `json:"key,omitempty"` // columns forming the record key
}

// Validate checks the topology's structure before anything runs.
func (t *Topology) Validate() error {
	if len(t.Stages) == 0 {
		return fmt.Errorf("engine: topology has no stages")
	}
	for _, s := range t.Stages {
		if len(s.Inputs) == 0 || s.Output == "" {
			return fmt.Errorf("engine: stage %s needs inputs and an output", s.Name)
		}
		stateful := 0
		for _, st := range s.Steps {
			if !st.Stateless() {
				stateful++
			}
		}
		if stateful > 1 {
			return fmt.Errorf("engine: stage %s has %d stateful steps; a stage holds at most one", s.Name, stateful)
		}
	}
	return nil
}

// String renders the topology for EXPLAIN.
func (t *Topology) String() string {
	var sb strings.Builder
	for i, s := range t.Stages {
		fmt.Fprintf(&sb, "stage %s: %s -> %s\n", s.Name, strings.Join(s.Inputs, ", "), s.Output)
		for _, st := range s.Steps {
			fmt.Fprintf(&sb, "  %s\n", st.String())
		}
		if i < len(t.Stages)-1 {
			sb.WriteString("\n")
		}
	}
	if t.Errors != "" {
		fmt.Fprintf(&sb, "poison rows -> %s\n", t.Errors)
	}
	return sb.String()
}
