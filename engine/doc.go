// Package engine runs plans.
//
// Bounded plans (Node trees: sources, step chains, joins, unions,
// INTERSECT and EXCEPT) run with
// RunBounded: the stateless steps directly above a source run on the
// source's per-partition goroutines, the rest on one goroutine. Rows
// stream to the sink as they are produced (a join emits at most 1024
// joined rows at a time); what must be held (a join's right side, sorts,
// aggregates, DISTINCT, subquery results) is charged to the query's
// operators.Budget, which fails the query with 53200 past
// Limits.MemoryBytes, and every loop asks the budget whether the query's
// context has ended (cancel, statement_timeout, closed connection), so a
// query stops within a batch or a few thousand row pairs. Subquery
// results are kept for the query (subqueryMemo): a correlated one's by
// the values of the outer columns it reads (plan.Subquery.Outer), so it
// runs once per distinct combination of them, not once per row; a
// LATERAL subquery's rows (plan.Apply, apply.go) likewise, by the values
// of the left row's columns it reads.
//
// Continuous plans (a Topology of stages) run as pipelines over Kafka:
// each stage has N consumer goroutines (Config.Consumers) in one consumer
// group named after the pipeline's incarnation (Topology.Ident) and the
// stage. Each goroutine owns the
// partitions Kafka assigns it, keeps one operator chain per partition, and
// runs its own consume -> transform -> emit -> commit loop on batches. An
// epoch is one checkpoint interval: with exactly-once on, an epoch's
// output records, poison-row reports and input offsets are written in ONE
// Kafka transaction (franz-go's GroupTransactSession), so a crash or a
// rebalance aborts the epoch and it is redone (a stop commits it, unless
// its records are still unacknowledged settleGrace after the stop: then
// it aborts too, settleContext); with exactly-once off,
// offsets are committed after the epoch's output is acknowledged
// (at-least-once). A stateless stage also ends its epoch after 50k input
// rows, so the next stage sees a backlog in small steps. An epoch
// processes every record of each poll, so a worker whose epoch ran past
// half the transaction timeout polls fewer records from then on
// (epochPace), lest a poll whose rows make much output outlive the
// transaction and be tried again for ever. A stateful
// stage's epoch also ships its state changes to the stage's compacted
// state topic; a partition whose local state does not match the committed
// offsets is rebuilt from that topic (restore.go). A stage may hold
// several stateful operators (a join and the aggregate over it, fused by
// the planner): each keeps its own keyspace under the partition's prefix
// (state.OperatorKeyspace), and watermarks, seeds and checkpoints reach
// them in chain order, so what one emits reaches the next first.
//
// The engine knows nothing of SQL or the catalog: it asks its Host for a
// pipeline's topology and for the datasets (topics and schemas) its stages
// read and write, asks whether to keep running, and reports each
// pipeline's live record (status and counters) back.
//
// Consumers are static group members (kgo.InstanceID, the same id as
// their transactional id), so a restarted process replaces its old
// members and keeps their partitions without a rebalance; Drop makes
// them leave by instance id, since a static member's client does not
// leave when it closes.
//
// Goroutines: per pipeline, one per consumer per stage, one supervisor
// that restarts consumers after errors (status RETRYING) and polls the
// Host's heartbeat, and one that aborts hanging transactions on the
// pipeline's topics (hanging.go).
package engine
