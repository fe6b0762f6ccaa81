package planner_test

import (
	"strings"
	"testing"

	"github.com/fvsql/fvsql/catalog"
	"github.com/fvsql/fvsql/pgerror"
	"github.com/fvsql/fvsql/planner"
	"github.com/fvsql/fvsql/sql"
	"github.com/fvsql/fvsql/types"
)

// relCatalog is a planner.Catalog of a few relations.
type relCatalog map[string]*catalog.Relation

func (c relCatalog) Lookup(_, name string) (*catalog.Relation, error) {
	if r, ok := c[name]; ok {
		return r, nil
	}
	return nil, pgerror.New(pgerror.UndefinedTable, "relation %q does not exist", name)
}

func planDDL(t *testing.T, cat relCatalog, text string) (*catalog.Relation, *planner.Continuous, error) {
	t.Helper()
	stmts, err := sql.Parse(text)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	switch st := stmts[0].Stmt.(type) {
	case *sql.CreateStream:
		rel, err := planner.PlanCreateStream(st)
		return rel, nil, err
	case *sql.CreateAs:
		c, err := planner.PlanContinuous(cat, st)
		if err != nil {
			return nil, nil, err
		}
		return c.Rel, c, nil
	}
	t.Fatalf("%s: not a CREATE", text)
	return nil, nil, nil
}

func namesCatalog(name string) relCatalog {
	cols := []catalog.Column{{Name: "k", Type: types.Int8}, {Name: "v", Type: types.Text}}
	return relCatalog{
		"src":   {Name: "src", Kind: catalog.Stream, Topic: "src", Format: "json", Partitions: 4, Columns: cols},
		"r1":    {Name: "r1", Kind: catalog.Stream, Backend: "redis://127.0.0.1:6379", Topic: "r1", Format: "json", Partitions: 1, Columns: cols},
		name:    {Name: name, Kind: catalog.Stream, Backend: "redis://127.0.0.1:6379", Topic: "k", Format: "json", Partitions: 1, Columns: cols},
		"short": {Name: "short", Kind: catalog.Stream, Topic: "short", Format: "json", Partitions: 1, Columns: cols},
	}
}

// TestNamesAndTopics: relation names and Kafka topics in fvsql's or Kafka's
// namespace are refused with 42501; names and topics Kafka would refuse (or
// that would make derived topics Kafka refuses) with 22023.
func TestNamesAndTopics(t *testing.T) {
	long := strings.Repeat("n", planner.MaxNameLength)
	cat := namesCatalog(long)
	denied, invalid, unsupported := pgerror.InsufficientPrivilege, pgerror.InvalidParameterValue, pgerror.FeatureNotSupported
	for _, c := range []struct {
		sql  string
		want pgerror.Code
	}{
		// fvsql's and Kafka's names, as relation names and as topics
		{`CREATE STREAM _fvsql_catalog (a INT)`, denied},
		{`CREATE STREAM "_FVSQL-v-s0-state" (a INT)`, denied},
		{`CREATE STREAM __consumer_offsets (a INT)`, denied},
		{`CREATE STREAM pg_x (a INT)`, denied},
		{`CREATE STREAM x (a INT) WITH (topic = '_fvsql_catalog')`, denied},
		{`CREATE STREAM x (a INT) WITH (topic = '_fvsql-v-s0-state')`, denied},
		{`CREATE STREAM x (a INT) WITH (topic = '_fvsql-v-repartition')`, denied},
		{`CREATE STREAM x (a INT) WITH (topic = '_Fvsql_catalog')`, denied},
		{`CREATE STREAM x (a INT) WITH (topic = '__consumer_offsets')`, denied},
		{`CREATE STREAM x (a INT) WITH (topic = '__transaction_state')`, denied},
		{`CREATE STREAM x (a INT) WITH (backend = 'kafka://127.0.0.1:9092', topic = '_fvsql_catalog')`, denied},
		{`CREATE STREAM x AS SELECT k FROM short WITH (topic = '_fvsql_catalog')`, denied},
		{`CREATE MATERIALIZED VIEW x WITH (topic = '__consumer_offsets') AS SELECT k, count(*) AS n FROM short GROUP BY k`, denied},
		{`CREATE SINK x AS SELECT k FROM short WITH (backend = 'kafka://127.0.0.1:9092', topic = '__transaction_state')`, denied},
		{`CREATE STREAM _fvsql_x AS SELECT k FROM short`, denied},
		{`CREATE SINK __x AS SELECT k FROM short WITH (backend = 'redis://127.0.0.1:6379', key = 'x')`, denied},
		// Kafka's rules for topics
		{`CREATE STREAM x (a INT) WITH (topic = '` + strings.Repeat("t", 250) + `')`, invalid},
		{`CREATE STREAM x (a INT) WITH (topic = '` + strings.Repeat("t", 260) + `')`, invalid},
		{`CREATE STREAM x (a INT) WITH (topic = 'a/b')`, invalid},
		{`CREATE STREAM x (a INT) WITH (topic = 'a b')`, invalid},
		{`CREATE STREAM x (a INT) WITH (topic = 'é')`, invalid},
		{`CREATE STREAM x (a INT) WITH (topic = '.')`, invalid},
		{`CREATE STREAM x (a INT) WITH (topic = '..')`, invalid},
		{`CREATE SINK x AS SELECT k FROM short WITH (backend = 'kafka://127.0.0.1:9092', topic = '` + strings.Repeat("t", 250) + `')`, invalid},
		{`CREATE STREAM "." (a INT)`, invalid},
		{`CREATE STREAM ".." (a INT)`, invalid},
		// names: at most MaxNameLength
		{`CREATE STREAM ` + long + `x (a INT)`, invalid},
		{`CREATE STREAM ` + long + `x AS SELECT k FROM short`, invalid},
		// stdio:// is fvsql pipe's
		{`CREATE STREAM x (line TEXT) WITH (backend = 'stdio://')`, unsupported},
		{`CREATE SINK x AS SELECT k FROM short WITH (backend = 'stdio://?framing=plain')`, unsupported},
	} {
		_, _, err := planDDL(t, cat, c.sql)
		if pgerror.CodeOf(err) != c.want {
			t.Errorf("%.120s: %v (code %s), want %s", c.sql, err, pgerror.CodeOf(err), c.want)
		}
	}

	for _, c := range []struct{ sql, topic string }{
		{`CREATE STREAM ` + long + ` (a INT)`, long},
		{`CREATE STREAM x (a INT) WITH (topic = '` + strings.Repeat("t", 249) + `')`, strings.Repeat("t", 249)},
		{`CREATE STREAM x (a INT) WITH (topic = 'Fvsql_x._-9')`, "Fvsql_x._-9"},
		{`CREATE STREAM x (a INT) WITH (topic = '_fvsq')`, "_fvsq"},
		{`CREATE STREAM x (a INT) WITH (topic = '_x')`, "_x"},
		// not Kafka topics: a Redis key, a file's path
		{`CREATE STREAM x (a INT) WITH (backend = 'redis://127.0.0.1:6379', key = '__fvsql x/y')`, "__fvsql x/y"},
		{`CREATE STREAM x (a INT) WITH (backend = 'file:///srv/__x y.log')`, "/srv/__x y.log"},
		// file:// is the file root; the topic (default the name) the file in it
		{`CREATE STREAM x (a INT) WITH (backend = 'file://', topic = 'logs/x.log')`, "logs/x.log"},
		{`CREATE STREAM x (a INT) WITH (backend = 'file://')`, "x"},
	} {
		rel, _, err := planDDL(t, cat, c.sql)
		if err != nil || rel.Topic != c.topic {
			t.Errorf("%.120s: topic %q, %v; want %q", c.sql, relTopic(rel), err, c.topic)
		}
	}
}

func relTopic(r *catalog.Relation) string {
	if r == nil {
		return ""
	}
	return r.Topic
}

// TestDerivedTopics: every topic fvsql derives from names of
// MaxNameLength characters (internal topics, state topics, the relations
// it creates) stays within MaxDerivedTopicLength, so that with a topic
// prefix of MaxTopicPrefix characters it is within Kafka's limit.
func TestDerivedTopics(t *testing.T) {
	if planner.MaxTopicPrefix+planner.MaxDerivedTopicLength != planner.MaxTopicLength || planner.MaxTopicPrefix < 64 {
		t.Fatalf("MaxTopicPrefix %d + MaxDerivedTopicLength %d != %d", planner.MaxTopicPrefix, planner.MaxDerivedTopicLength, planner.MaxTopicLength)
	}
	long := strings.Repeat("p", planner.MaxNameLength)
	in := strings.Repeat("n", planner.MaxNameLength)
	cat := namesCatalog(in)
	longest := 0
	for _, q := range []string{
		// a repartition stage and a stateful stage; <view>_changes
		`CREATE MATERIALIZED VIEW ` + long + ` AS SELECT k, count(*) AS n FROM src GROUP BY k`,
		// two inputs on other backends: _fvsql-<pipeline>-ingest-<input>
		`CREATE STREAM ` + long + ` AS SELECT k, v FROM r1 UNION ALL SELECT k, v FROM ` + in,
		`CREATE SINK ` + long + ` AS SELECT k FROM src WITH (backend = 'redis://127.0.0.1:6379', key = 'x')`,
	} {
		_, c, err := planDDL(t, cat, q)
		if err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
		topics := []string{c.Errors.Topic}
		if c.Rel.Kind != catalog.Sink {
			topics = append(topics, c.Rel.Topic)
		}
		if c.Changes != nil {
			topics = append(topics, c.Changes.Topic)
		}
		for _, s := range c.Topology.Internal {
			topics = append(topics, s.Topic)
		}
		for _, s := range c.Topology.Stages {
			topics = append(topics, "_fvsql-"+long+".12345678-"+s.Name+"-state") // engine's stateTopic, of Topology.Ident
		}
		for _, tp := range topics {
			longest = max(longest, len(tp))
			if len(tp) > planner.MaxDerivedTopicLength {
				t.Errorf("%.60s…: topic %s has %d characters, more than %d", q, tp, len(tp), planner.MaxDerivedTopicLength)
			}
		}
	}
	if longest != planner.MaxDerivedTopicLength {
		t.Errorf("the longest derived topic has %d characters; MaxDerivedTopicLength says %d", longest, planner.MaxDerivedTopicLength)
	}
}

// TestTopicPrefix: the server's prefix counts against Kafka's limit.
func TestTopicPrefix(t *testing.T) {
	if err := planner.CheckTopicPrefix(strings.Repeat("p", planner.MaxTopicPrefix)); err != nil {
		t.Errorf("longest prefix: %v", err)
	}
	for _, p := range []string{strings.Repeat("p", planner.MaxTopicPrefix+1), "a/b", "a b"} {
		if err := planner.CheckTopicPrefix(p); pgerror.CodeOf(err) != pgerror.InvalidParameterValue {
			t.Errorf("prefix %.20q: %v, want 22023", p, err)
		}
	}
	rel := &catalog.Relation{Name: "x", Topic: strings.Repeat("t", 240)}
	if err := planner.TopicFits(rel, "123456789"); err != nil {
		t.Errorf("249 characters with the prefix: %v", err)
	}
	if err := planner.TopicFits(rel, "1234567890"); pgerror.CodeOf(err) != pgerror.InvalidParameterValue {
		t.Errorf("250 characters with the prefix: %v, want 22023", err)
	}
	rel.Backend = "kafka://u:p@127.0.0.1:9092"
	if err := planner.TopicFits(rel, "1234567890"); pgerror.CodeOf(err) != pgerror.InvalidParameterValue {
		t.Errorf("kafka:// backend, 250 characters with the prefix: %v, want 22023", err)
	}
	rel.Backend = "redis://127.0.0.1:6379"
	if err := planner.TopicFits(rel, "1234567890"); err != nil {
		t.Errorf("a Redis key is not a topic: %v", err)
	}
}

// TestColumnNames: a select list item without an alias is named as
// PostgreSQL names it (FigureColname): a scalar subquery after its one
// column, EXISTS and ARRAY by their keywords, a cast of an unnamed value
// after its type as the grammar keeps it. The names are PostgreSQL 15's
// for the same SELECT; a view's columns are named the same way.
func TestColumnNames(t *testing.T) {
	cat := namesCatalog("x")
	for _, c := range []struct{ sel, want string }{
		{"(SELECT max(k) FROM src), (SELECT k FROM src LIMIT 1), (SELECT 1), (SELECT 1 AS one)", "max k ?column? one"},
		{"EXISTS (SELECT 1), ARRAY(SELECT 1), ARRAY[1], 1 IN (SELECT 1)", "exists array array ?column?"},
		{"(SELECT k + 1 FROM src LIMIT 1), (SELECT (SELECT 2 AS two)), (SELECT 1 AS a UNION SELECT 1)", "?column? two a"},
		{"1::int, 1::integer, 1::bigint, 1.5::double precision, 'a'::varchar(3), '1'::numeric(3,1)", "int4 int4 int8 float8 varchar numeric"},
		{"true::boolean, '{1}'::int[], '1 day'::interval, 'int4'::regtype, k::text, CASE WHEN true THEN 1 END", "bool int4 interval regtype k case"},
	} {
		stmts, err := sql.Parse("SELECT " + c.sel + " FROM src LIMIT 1")
		if err != nil {
			t.Fatalf("%s: %v", c.sel, err)
		}
		q, err := planner.PlanQuery(cat, stmts[0].Stmt.(*sql.Query), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.sel, err)
		}
		var got []string
		for _, col := range q.Columns {
			got = append(got, col.Name)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("SELECT %s: columns %q, want %q", c.sel, strings.Join(got, " "), c.want)
		}
	}
	_, c, err := planDDL(t, cat, "CREATE MATERIALIZED VIEW named AS SELECT k, (SELECT max(v) FROM short WHERE short.k = src.k), count(*) FROM src GROUP BY k")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, col := range c.Rel.Columns {
		if !col.Hidden {
			got = append(got, col.Name)
		}
	}
	if strings.Join(got, " ") != "k max count" {
		t.Errorf("view columns %q, want k max count", strings.Join(got, " "))
	}
}
