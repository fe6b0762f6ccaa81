package planner

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/expr"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// PlanCreateStream validates CREATE STREAM and returns the relation to
// store (without OID). Options: backend (URI, default the server's
// Kafka; stdio:// is refused, 0A000), topic (default the name; on Kafka a
// valid topic outside fvsql's and Kafka's own, see CheckTopic), format
// (json), partitions (1), key (none; a column or comma-separated columns).
// The name follows checkName's rules. The server's topic prefix is the
// caller's to check (TopicFits).
func PlanCreateStream(cs *sql.CreateStream) (*catalog.Relation, error) {
	if err := checkName(cs.Name); err != nil {
		return nil, err
	}
	rel := &catalog.Relation{Name: cs.Name, Kind: catalog.Stream, Topic: cs.Name, Format: "json", Partitions: 1}
	seen := map[string]bool{}
	for _, c := range cs.Columns {
		if seen[c.Name] {
			return nil, pgerror.New(pgerror.DuplicateColumn, "column %q specified more than once", c.Name)
		}
		if strings.HasPrefix(c.Name, "_") && isMetaColumn(c.Name) {
			return nil, pgerror.New(pgerror.DuplicateColumn, "column name %q is reserved for record metadata", c.Name)
		}
		seen[c.Name] = true
		rel.Columns = append(rel.Columns, catalog.Column{Name: c.Name, Type: c.Type, NotNull: c.NotNull})
	}
	if len(rel.Columns) == 0 {
		return nil, pgerror.New(pgerror.InvalidObjectDefinition, "a stream needs at least one column")
	}
	if err := applyOptions(rel, cs.Options); err != nil {
		return nil, err
	}
	if _, err := types.NewCodec(rel.Format, rel.ColumnNames(), rel.ColumnTypes()); err != nil {
		return nil, err
	}
	if cs.Watermark != nil {
		wm, err := planWatermark(rel, cs.Watermark)
		if err != nil {
			return nil, err
		}
		rel.Watermark = wm
	}
	return rel, nil
}

// watermarkColumn finds the column a WATERMARK names: a declared one
// first (it shadows a metadata column of its name), else the record
// timestamp.
func watermarkColumn(rel *catalog.Relation, name string) (catalog.Column, bool) {
	if i := rel.ColumnIndex(name); i >= 0 {
		return rel.Columns[i], true
	}
	if name == sql.RecordTimestamp && rel.HasMeta() {
		for _, c := range catalog.MetaColumns {
			if c.Name == name {
				return c, true
			}
		}
	}
	return catalog.Column{}, false
}

func isMetaColumn(name string) bool {
	switch name {
	case "_key", "_partition", "_offset", "_timestamp":
		return true
	}
	return false
}

// Names and topics.
//
// A relation's name is also its default Kafka topic, and fvsql derives
// further topics from names (InternalTopic, the engine's state topics) and
// further relations (<name>_errors, <view>_changes). Kafka refuses a topic
// longer than MaxTopicLength, and the embedded broker, which does not, keeps
// each partition in a directory named after its topic: a longer topic makes a
// directory the file system refuses, and the server can no longer start. So
// names are bounded such that no topic fvsql derives from them, with the
// server's topic prefix in front, can exceed Kafka's limit.
const (
	// MaxTopicLength is Kafka's limit on a topic's length (a partition lives
	// in a directory <topic>-<partition>, and a file name has at most 255
	// bytes).
	MaxTopicLength = 249
	// MaxNameLength is the longest relation name CREATE accepts: PostgreSQL's
	// own identifier limit (NAMEDATALEN - 1), so that names fit pg_catalog's
	// name columns and what PostgreSQL clients assume. The relations fvsql
	// derives from a name (<name>_errors, <view>_changes) may be longer.
	MaxNameLength = 63
	// MaxDerivedTopicLength is the longest topic fvsql derives from names
	// (before the server's prefix): the ingest topic of a pipeline reading
	// two streams on other backends, _fvsql-<pipeline>-ingest-<input>. The
	// others are shorter: _fvsql-<name>-repartition and
	// _fvsql-<name>-right-state are 19 characters longer than the name,
	// <view>_changes 8.
	MaxDerivedTopicLength = len("_fvsql-") + MaxNameLength + len("-ingest-") + MaxNameLength
	// MaxTopicPrefix is the longest server topic prefix (--topic-prefix)
	// with which every derived topic stays within MaxTopicLength (108).
	MaxTopicPrefix = MaxTopicLength - MaxDerivedTopicLength
)

func checkName(name string) error {
	if name == "" || len(name) > MaxNameLength {
		return pgerror.New(pgerror.InvalidParameterValue, "invalid name %q: a name has 1 to %d characters", name, MaxNameLength)
	}
	for _, r := range name {
		if !topicChar(r) {
			return pgerror.New(pgerror.InvalidParameterValue, "name %q: fvsql names may use letters, digits, '_', '-' and '.' (they name Kafka topics)", name)
		}
	}
	if name == "." || name == ".." {
		return pgerror.New(pgerror.InvalidParameterValue, "invalid name %q: Kafka refuses it as a topic", name)
	}
	if strings.HasPrefix(name, "pg_") {
		return pgerror.New(pgerror.InsufficientPrivilege, "name %q is reserved: the pg_ prefix is for system relations", name)
	}
	return reserved("name", name)
}

// reserved refuses a name or topic in fvsql's namespace (_fvsql: the catalog
// topic _fvsql_catalog, pipelines' internal topics _fvsql-<pipeline>-…) or
// Kafka's (__: __consumer_offsets, __transaction_state): a stream declared
// over one would read or forge their records. The check ignores case, since
// names differing in case alone would collide where files hold topics on a
// case-insensitive file system.
func reserved(what, s string) error {
	if len(s) >= len("_fvsql") && strings.EqualFold(s[:len("_fvsql")], "_fvsql") {
		return pgerror.New(pgerror.InsufficientPrivilege, "%s %q is reserved: the _fvsql prefix is for fvsql's own topics", what, s)
	}
	if strings.HasPrefix(s, "__") {
		return pgerror.New(pgerror.InsufficientPrivilege, "%s %q is reserved: the __ prefix is for Kafka's internal topics", what, s)
	}
	return nil
}

func topicChar(r rune) bool {
	return r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// CheckTopic applies Kafka's rules for topic names (at most
// MaxTopicLength characters of [a-zA-Z0-9._-], not "." or "..": 22023) and
// refuses fvsql's and Kafka's internal topics (42501). The server's topic
// prefix, which the Kafka backend puts in front, is TopicFits's to check.
func CheckTopic(topic string) error {
	switch {
	case topic == "":
		return pgerror.New(pgerror.InvalidParameterValue, "topic must not be empty")
	case len(topic) > MaxTopicLength:
		return pgerror.New(pgerror.InvalidParameterValue, "topic %.40q… has %d characters: Kafka allows at most %d", topic, len(topic), MaxTopicLength)
	case topic == "." || topic == "..":
		return pgerror.New(pgerror.InvalidParameterValue, "topic %q is not a valid Kafka topic", topic)
	}
	for _, r := range topic {
		if !topicChar(r) {
			return pgerror.New(pgerror.InvalidParameterValue, "topic %q: Kafka topics may use only letters, digits, '.', '_' and '-'", topic)
		}
	}
	return reserved("topic", topic)
}

// TopicFits checks that a stream's topic, with the server's topic prefix in
// front, stays within Kafka's limit (22023). It concerns only relations on
// Kafka (the server's or a kafka:// backend: both add the prefix).
func TopicFits(rel *catalog.Relation, prefix string) error {
	if !onKafka(rel) || len(prefix)+len(rel.Topic) <= MaxTopicLength {
		return nil
	}
	return pgerror.New(pgerror.InvalidParameterValue, "topic %.40q… has %d characters, and with the server's topic prefix %q %d: Kafka allows at most %d",
		rel.Topic, len(rel.Topic), prefix, len(prefix)+len(rel.Topic), MaxTopicLength)
}

// CheckTopicPrefix validates a server's topic prefix: topic characters, and
// at most MaxTopicPrefix of them.
func CheckTopicPrefix(prefix string) error {
	if len(prefix) > MaxTopicPrefix {
		return pgerror.New(pgerror.InvalidParameterValue, "topic prefix %q has %d characters: at most %d leave room for the topics fvsql derives from names (%d characters)",
			prefix, len(prefix), MaxTopicPrefix, MaxDerivedTopicLength)
	}
	for _, r := range prefix {
		if !topicChar(r) {
			return pgerror.New(pgerror.InvalidParameterValue, "topic prefix %q: Kafka topics may use only letters, digits, '.', '_' and '-'", prefix)
		}
	}
	return nil
}

func onKafka(rel *catalog.Relation) bool {
	if rel.Backend == "" {
		return true
	}
	u, err := url.Parse(rel.Backend)
	return err == nil && strings.EqualFold(u.Scheme, "kafka")
}

// applyOptions fills the relation's backend settings from WITH options.
// The backend decides what `key` means: for Kafka it names the columns
// records are keyed (partitioned) by; for Redis it is the stream's key in
// Redis, which is required. shard_key names the key columns on every
// backend (on Redis, the columns rows are routed to shards by), and
// shards is partitions by the toolkit's name.
func applyOptions(rel *catalog.Relation, opts []sql.Option) error {
	seen := map[string]string{}
	for _, o := range opts {
		if _, dup := seen[o.Key]; dup {
			return pgerror.New(pgerror.SyntaxError, "option %q given more than once", o.Key)
		}
		seen[o.Key] = o.Value
	}
	_, partitions := seen["partitions"]
	if _, shards := seen["shards"]; shards && partitions {
		return pgerror.New(pgerror.SyntaxError, "partitions and shards are one option; give one of them")
	}
	scheme := "kafka"
	if b, ok := seen["backend"]; ok && b != "" {
		u, err := url.Parse(b)
		if err != nil || u.Scheme == "" || !strings.Contains(b, "://") {
			return pgerror.New(pgerror.InvalidParameterValue, "backend must be a URI like kafka://host:9092, not %q", b)
		}
		scheme = strings.ToLower(u.Scheme)
		rel.Backend = b
		switch scheme {
		case "file":
			// file:///path names the file or directory (inside the server's
			// file root, which the backend enforces); file:// is the root
			// itself, where the topic (default: the name) is the file.
			if u.Path != "" {
				rel.Topic = u.Path
			}
		case "stdio":
			// The server's standard input and output are not a client's
			// to read or write: stdio:// streams are fvsql pipe's.
			return pgerror.New(pgerror.FeatureNotSupported, "backend %q: stdio:// streams exist only in fvsql pipe, not on a server", b).
				WithHint("Run the query with fvsql pipe, or use a file:// stream.")
		}
	}
	_, key := seen["key"]
	if _, shardKey := seen["shard_key"]; shardKey && key && scheme != "redis" {
		return pgerror.New(pgerror.SyntaxError, "key and shard_key are one option for a %s stream; give one of them", scheme)
	}
	for _, o := range opts {
		switch o.Key {
		case "backend":
		case "topic":
			if o.Value == "" {
				return pgerror.New(pgerror.InvalidParameterValue, "topic must not be empty")
			}
			rel.Topic = o.Value
		case "format":
			rel.Format = strings.ToLower(o.Value)
			if !slices.Contains(types.Formats, rel.Format) {
				return pgerror.New(pgerror.InvalidParameterValue, "unknown format %q: use one of %s", o.Value, strings.Join(types.Formats, ", "))
			}
		case "partitions", "shards":
			n, err := strconv.Atoi(o.Value)
			if err != nil || n < 1 || n > 10000 {
				return pgerror.New(pgerror.InvalidParameterValue, "%s must be an integer from 1 to 10000, not %q", o.Key, o.Value)
			}
			rel.Partitions = n
		case "key", "shard_key":
			if scheme == "redis" && o.Key == "key" {
				if o.Value == "" {
					return pgerror.New(pgerror.InvalidParameterValue, "key (the Redis stream key) must not be empty")
				}
				rel.Topic = o.Value
				continue
			}
			for _, k := range strings.Split(o.Value, ",") {
				k = strings.TrimSpace(k)
				if rel.ColumnIndex(k) < 0 {
					return pgerror.New(pgerror.UndefinedColumn, "key column %q does not exist", k)
				}
				rel.Key = append(rel.Key, k)
			}
		default:
			if !backendOption(scheme, o.Key) {
				return unknownOption(scheme, o.Key)
			}
			if rel.Options == nil {
				rel.Options = map[string]string{}
			}
			rel.Options[o.Key] = o.Value
		}
	}
	if scheme == "redis" {
		if _, ok := seen["key"]; !ok {
			return pgerror.New(pgerror.InvalidParameterValue, "a Redis stream needs WITH (key = '<redis stream key>')")
		}
	}
	if scheme != "kafka" && scheme != "redis" && rel.Partitions > 1 {
		return pgerror.New(pgerror.InvalidParameterValue, "%s streams have one shard; partitions must be 1", scheme)
	}
	if scheme == "kafka" {
		return CheckTopic(rel.Topic)
	}
	return nil
}

// commonOptions are the WITH options of every stream, whatever its backend.
var commonOptions = []string{"backend", "topic", "format", "partitions", "shards", "key", "shard_key"}

// kafkaTopicConfigs are the Kafka topic configs a kafka:// stream passes
// to the topic it creates (names as Kafka spells them).
var kafkaTopicConfigs = []string{
	"cleanup.policy", "compression.type", "delete.retention.ms", "max.compaction.lag.ms",
	"max.message.bytes", "message.timestamp.type", "min.cleanable.dirty.ratio",
	"min.compaction.lag.ms", "min.insync.replicas", "retention.bytes", "retention.ms",
	"segment.bytes", "segment.ms",
}

// backendOptions are the further WITH options each backend takes (the
// file backend's settings are query parameters of its URI).
var backendOptions = map[string][]string{
	"kafka": kafkaTopicConfigs,
	"redis": {"maxlen"},
}

// backendOption says whether a stream on scheme's backend takes option
// key beyond the common ones.
func backendOption(scheme, key string) bool {
	return slices.Contains(backendOptions[scheme], key)
}

// unknownOption is the 22023 error for an option no part of fvsql reads,
// naming what the stream does take: an option accepted and ignored would
// make a stream unlike the one the statement asked for.
func unknownOption(scheme, key string) error {
	known := append(slices.Clone(commonOptions), backendOptions[scheme]...)
	return pgerror.New(pgerror.InvalidParameterValue, "unrecognized option %q for a %s stream", key, scheme).
		WithHint("Valid options are: %s.", strings.Join(known, ", "))
}

// planWatermark accepts WATERMARK FOR col AS col [- interval]. col is a
// declared timestamp column or, when no declared column has the name, the
// record timestamp _timestamp (a timestamptz): event time is then each
// record's own time. The other metadata columns are not times.
func planWatermark(rel *catalog.Relation, w *sql.Watermark) (*catalog.Watermark, error) {
	col, ok := watermarkColumn(rel, w.Column)
	if !ok {
		return nil, pgerror.New(pgerror.UndefinedColumn, "watermark column %q does not exist", w.Column)
	}
	if t := col.Type; t != types.Timestamp && t != types.TimestampTZ {
		return nil, pgerror.New(pgerror.DatatypeMismatch, "watermark column %q must be a timestamp, not %s", w.Column, t)
	}
	bad := pgerror.New(pgerror.InvalidObjectDefinition,
		"WATERMARK FOR %s AS … must be %s or %s - INTERVAL '…'", w.Column, w.Column, w.Column)
	switch e := w.Expr.(type) {
	case *sql.ColumnRef:
		if e.Name != w.Column {
			return nil, bad
		}
		return &catalog.Watermark{Column: w.Column}, nil
	case *sql.Binary:
		c, ok := e.L.(*sql.ColumnRef)
		if !ok || c.Name != w.Column || e.Op != "-" {
			return nil, bad
		}
		b := &builder{}
		d, err := b.build(&exprCtx{scope: &scope{}, what: "WATERMARK", noAggs: true}, e.R)
		if err != nil {
			return nil, err
		}
		if d, err = expr.Coerce(d, types.Interval, false); err != nil || d.Kind != expr.KConst || d.Val.K != types.Interval {
			return nil, bad
		}
		delay := d.Val.Interval().Duration()
		if delay < 0 {
			return nil, pgerror.New(pgerror.InvalidObjectDefinition, "watermark delay must not be negative")
		}
		return &catalog.Watermark{Column: w.Column, Delay: delay}, nil
	}
	return nil, bad
}
