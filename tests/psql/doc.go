// Package psql runs the real psql client (15 or later) against a started
// fvsql server and checks its describe meta-commands — \d, \d name for a
// stream, a materialized view, a sink and a system table, \d+, \dt, \dv,
// \dm, \ds, \dn, \l, \du, \dT, \df and more — print what they should and
// no error. Each meta-command runs as psql -E would send it, so a
// catalog query fvsql cannot answer fails the test with psql's message.
package psql
