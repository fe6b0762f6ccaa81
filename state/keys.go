package state

import (
	"encoding/binary"

	"github.com/fvsql/fvsql/types"
)

// The whole Pebble keyspace of a data directory. Every key any package
// writes is built here, so that one file shows what lives where and no
// two owners can pick overlapping prefixes. The bytes are a storage
// format: a data directory written by an earlier build reads back the
// same, so they only change with a migration.
//
//	catalog/rel/<name>                     a relation's JSON definition (catalog)
//	[s][pipeline][stage][topic][partition] o<operator key>   operator state (engine)
//	[s][pipeline][stage][topic][partition] m watermarks      a partition's meta: offset, watermarks
//	[v][view] r<row key>                   a view's local copy: row under its key encoding (server)
//	[vpos][view][partition]                the copy's next offset in the view's table topic
//
// [x] is x in the order-preserving key encoding (types.AppendKey), so a
// name can never be a prefix of another name's keys.

var catalogRelPrefix = []byte("catalog/rel/")

// CatalogPrefix is the prefix of every catalog relation record. The
// caller must not modify the result.
func CatalogPrefix() []byte { return catalogRelPrefix }

// CatalogKey is the key of relation name's catalog record.
func CatalogKey(name string) []byte {
	return append(catalogRelPrefix[:len(catalogRelPrefix):len(catalogRelPrefix)], name...)
}

// PipelinePrefix is the prefix of all of a pipeline's operator state.
func PipelinePrefix(pipeline string) []byte {
	return types.AppendKey(types.AppendKey(nil, types.NewText("s")), types.NewText(pipeline))
}

// StagePrefix is the prefix of one stage's state, all its partitions.
func StagePrefix(pipeline, stage string) []byte {
	return types.AppendKey(PipelinePrefix(pipeline), types.NewText(stage))
}

// PartitionPrefix is the prefix of one input partition's state in a stage.
// Its operator's keys follow OperatorSuffix, its meta MetaKey.
func PartitionPrefix(pipeline, stage, topic string, part int32) []byte {
	b := types.AppendKey(StagePrefix(pipeline, stage), types.NewText(topic))
	return types.AppendKey(b, types.NewInt8(int64(part)))
}

var (
	// OperatorSuffix follows PartitionPrefix in the keys of the
	// partition's operator state: its first stateful operator's
	// (OperatorKeyspace).
	OperatorSuffix = []byte{'o'}
	// MetaSuffix follows PartitionPrefix in the partition's meta table,
	// whose one key is MetaKey.
	MetaSuffix = []byte{'m'}
	// MetaKey is the key of a partition's meta in its meta table: the
	// input offset its state reflects and its watermarks.
	MetaKey = []byte("watermarks")
)

// OperatorKeyspace is the suffix after PartitionPrefix of the k-th
// stateful operator's keys in a stage that holds several (k from 0): the
// first's is OperatorSuffix, as in the stages of one stateful operator
// that came before several existed; the others' are 'p' and k, a
// keyspace no 'o' key shares.
func OperatorKeyspace(k int) []byte {
	if k == 0 {
		return OperatorSuffix
	}
	return binary.AppendUvarint([]byte{'p'}, uint64(k))
}

// ViewPrefix is the prefix of everything a view's local copy stores:
// ViewRowsPrefix's rows (its positions are under ViewPosPrefix).
func ViewPrefix(view string) []byte {
	return types.AppendKey(types.AppendKey(nil, types.NewText("v")), types.NewText(view))
}

// ViewRowsPrefix is the prefix of a view copy's rows; a row's key is this
// followed by the view's key encoding of the row (engine.TableKey), the
// record key of the view's table topic.
func ViewRowsPrefix(view string) []byte { return append(ViewPrefix(view), 'r') }

// ViewPosPrefix is the prefix of a view copy's positions in its table
// topic, one key per partition (ViewPosKey).
func ViewPosPrefix(view string) []byte {
	return types.AppendKey(types.AppendKey(nil, types.NewText("vpos")), types.NewText(view))
}

// ViewPosKey is the key of a view copy's next offset in one partition of
// its table topic.
func ViewPosKey(view string, part int32) []byte {
	return types.AppendKey(ViewPosPrefix(view), types.NewInt8(int64(part)))
}
