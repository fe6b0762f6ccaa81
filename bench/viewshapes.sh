#!/usr/bin/env bash
# bench/viewshapes.sh: end-to-end timings of view shapes over one stream,
# from CREATE to the end of FLUSH, against a running fvsql server:
#
#   fvsql --data-dir /tmp/vs --listen 127.0.0.1:5433 --kafka-listen 127.0.0.1:19192 &
#   bench/viewshapes.sh [host] [port] [rows]
#
# It makes a 4-partition stream bo of rows (default 500,000) over 1,000
# customers, then times each view, and checks each against its SELECT
# run bounded (the EXCEPT of the two must be empty).
set -euo pipefail
HOST="${1:-127.0.0.1}"
PORT="${2:-5433}"
ROWS="${3:-500000}"
P=(psql -h "$HOST" -p "$PORT" -U fvsql -q -A -t -v ON_ERROR_STOP=1)
"${P[@]}" -c "CREATE STREAM bo (id BIGINT, cust INT, amount INT, ts TIMESTAMP) WITH (partitions = 4)"
"${P[@]}" -c "INSERT INTO bo SELECT i, i % 1000, (i::bigint * 7919) % 1000, TIMESTAMP '2026-01-01' + i * INTERVAL '1 second' FROM generate_series(1, $ROWS) i"
"${P[@]}" -c "FLUSH"
run() {
  local name=$1 query=$2
  local t0 t1
  t0=$(date +%s.%N)
  "${P[@]}" -c "CREATE MATERIALIZED VIEW $name AS $query" -c "FLUSH"
  t1=$(date +%s.%N)
  local diff
  diff=$("${P[@]}" -c "SELECT count(*) FROM ($query EXCEPT SELECT * FROM $name) x")
  printf '%-10s %6.1f s  rows=%s  differs=%s\n' "$name" "$(echo "$t1 - $t0" | bc)" "$("${P[@]}" -c "SELECT count(*) FROM $name")" "$diff"
}
run vgroup "SELECT cust, count(*) AS n, sum(amount) AS s FROM bo GROUP BY cust"
run vavg "SELECT cust, avg(amount) AS a FROM bo GROUP BY cust"
run vstddev "SELECT cust, stddev(amount) AS sd FROM bo GROUP BY cust"
run vmedian "SELECT cust, percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) AS med FROM bo GROUP BY cust"
run vrankgrp "SELECT cust, sum(amount) AS s, rank() OVER (ORDER BY sum(amount) DESC) AS r FROM bo GROUP BY cust"
# Temporal filters over the same rows, against the plain filter that
# keeps the same half: vrecent keeps the newer half, each row stored
# with the time it leaves (an hour or more from now); vdue the older
# half, shown at once with nothing stored.
X=$("${P[@]}" -c "SELECT extract(epoch FROM now() - (TIMESTAMP '2026-01-01' + ($ROWS / 2) * INTERVAL '1 second'))::bigint")
run vfilter "SELECT * FROM bo WHERE ts > TIMESTAMP '2026-01-01' + ($ROWS / 2) * INTERVAL '1 second'"
run vrecent "SELECT * FROM bo WHERE ts > now() - INTERVAL '$X seconds'"
run vdue "SELECT * FROM bo WHERE ts <= now() - INTERVAL '$X seconds'"
