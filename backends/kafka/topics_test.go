package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicReady checks what CreateTopic waits for: a listing of the
// created topic's id (an earlier topic of the name is not ready, however
// healthy), with a leader for every partition.
func TestTopicReady(t *testing.T) {
	created, earlier := [16]byte{1}, [16]byte{2}
	listing := func(id [16]byte, leaders ...int32) *kmsg.MetadataResponseTopic {
		tp := kmsg.NewMetadataResponseTopic()
		tp.TopicID = id
		for i, l := range leaders {
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Partition, p.Leader = int32(i), l
			tp.Partitions = append(tp.Partitions, p)
		}
		return &tp
	}
	missing := kmsg.NewMetadataResponseTopic()
	missing.ErrorCode = kerr.UnknownTopicOrPartition.Code
	for _, c := range []struct {
		name  string
		t     *kmsg.MetadataResponseTopic
		id    [16]byte
		ready bool
	}{
		{"created, led", listing(created, 1, 1), created, true},
		{"an earlier topic of the name", listing(earlier, 1, 1), created, false},
		{"a partition without a leader", listing(created, 1, -1), created, false},
		{"no partitions yet", listing(created), created, false},
		{"not listed", &missing, created, false},
		{"existed before: any id", listing(earlier, 1), [16]byte{}, true},
	} {
		if err := topicReady(c.t, c.id); (err == nil) != c.ready {
			t.Errorf("%s: topicReady = %v, want ready %v", c.name, err, c.ready)
		}
	}
}
