#!/usr/bin/env bash
# scripts/test.sh: the project's single test command (see scripts/README.md).
#
#   ./scripts/test.sh                      # everything: vet, staticcheck, go test ./..., fuzz, sqllogic on real Kafka
#   ./scripts/test.sh -run Foo ./pkg/...   # these go test arguments instead of ./...
#   ./scripts/test.sh --clients-postgres   # only the client suites (tests/clients), against a
#                                          # throw-away real PostgreSQL, to check the suites
#
# It first runs `go vet ./...` and staticcheck ./... (installing staticcheck
# into the cache dir when it is not there at the pinned version) and stops
# with a failure if either reports anything. It then starts a throw-away single-node Apache Kafka broker (KRaft; jars from
# Maven Central, cached) and a private Redis server on free loopback ports,
# exports FVSQL_TEST_KAFKA / FVSQL_TEST_REDIS, runs the Go tests, runs each
# Go fuzz target for a short time (FUZZ_TARGETS), runs the SQL logic suite a
# second time against the real broker, and always stops both services and
# deletes their data, also when tests fail or it is interrupted.
#
# Environment:
#   FVSQL_TEST_KAFKA=host:port  use this Kafka instead of starting one
#   FVSQL_TEST_REDIS=host:port  use this Redis instead of starting one
#   FVSQL_CACHE                 cache dir (default ${XDG_CACHE_HOME:-~/.cache}/fvsql)
#   FVSQL_KAFKA_VERSION         Kafka version from Maven Central (default 4.4.0)
#   FVSQL_SQLLOGIC_REAL=1|0     force/skip the sqllogic pass on real Kafka
#                               (default: run it only when no arguments are given)
#   FVSQL_GO_TEST_TIMEOUT       go test -timeout (default 30m)
#   FVSQL_SQLLOGIC_PARALLEL     .slt files at once in the pass on real Kafka (default 4)
#   FVSQL_GO_TEST_PARALLEL      go test -parallel of the go test phase (default 3)
#   FVSQL_LINT=0                skip go vet and staticcheck (local runs only:
#                               ignored when CI is set)
#   FVSQL_FUZZ=0                skip the fuzz phase (local runs only: ignored
#                               when CI is set)
#   FVSQL_FUZZ_TIME             go test -fuzztime of each fuzz target (default 15s)
#   FVSQL_KAFKA_LIBS            exported for tests that start a private broker
#                               (tests/fvsqltest.StartKafka): the cached jars;
#                               FVSQL_KAFKA_JAVA: the java to run them with
#   KAFKA_HEAP_OPTS             broker heap (default -Xmx512m -Xms512m)
#   FVSQL_CLIENTS_PYTHON, FVSQL_CLIENTS_SUPERSET, FVSQL_CLIENTS_JDBC, FVSQL_CLIENTS_NODE
#                               exported for tests/clients: the Python venvs, the
#                               pgjdbc jar and node_modules this script installs
#                               (from PyPI, Maven Central, npm) into the cache dir
#   CI                          set by CI: kept exported, makes testenv fail instead of skip
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

KAFKA_VERSION="${FVSQL_KAFKA_VERSION:-4.4.0}"
CACHE_DIR="${FVSQL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fvsql}"
MAVEN_REPO="$CACHE_DIR/m2"
KAFKA_HOME="$CACHE_DIR/kafka-$KAFKA_VERSION"
KAFKA_LIBS="$KAFKA_HOME/libs"
KAFKA_MARKER="$KAFKA_LIBS/.fvsql-complete"
KAFKA_POM="$ROOT/scripts/kafka/pom.xml"
KAFKA_LOG4J="$ROOT/scripts/kafka/log4j2.properties"
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xmx512m -Xms512m}"
KAFKA_START_TIMEOUT=90 # seconds until the broker must answer
REDIS_START_TIMEOUT=30 # seconds until Redis must answer PING
GO_TEST_TIMEOUT="${FVSQL_GO_TEST_TIMEOUT:-30m}"
# .slt files the pass on real Kafka runs at once, each with its own
# server: a file mostly waits for its server's commits, so this pass,
# which runs alone, takes more files than CPUs. The go test phase runs
# its tests that call t.Parallel (the embedded pass's .slt files, and
# nothing else) GO_TEST_PARALLEL at once: one more than the 2 CPUs of
# CI's machine, as another package's tests run beside them.
SQLLOGIC_PARALLEL="${FVSQL_SQLLOGIC_PARALLEL:-4}"
GO_TEST_PARALLEL="${FVSQL_GO_TEST_PARALLEL:-3}"
STATICCHECK_MODULE=honnef.co/go/tools
STATICCHECK_VERSION=v0.8.2
STATICCHECK_DIR="$CACHE_DIR/bin"
STATICCHECK="$STATICCHECK_DIR/staticcheck"
FUZZ_TIME="${FVSQL_FUZZ_TIME:-15s}"
PGJDBC_VERSION=42.7.14 # the pgjdbc tests/clients drives (Python and npm pins are in tests/clients)
# The fuzz phase's targets, "package target": go test -fuzz takes one
# package and one target per run. They check what a client meets (a
# panic, an error without SQLSTATE, a hang, a malformed reply). The
# sql package's FuzzFormatRoundTrip is not among them: it checks that
# sql.Format, a test aid the server never calls, prints a fixed point,
# and still finds printing corner cases (a table function first in a
# parenthesized join); run it by hand (scripts/README.md). Its corpus
# runs with every go test of ./sql.
FUZZ_TARGETS=(
	"./sql FuzzParse"
	"./pgwire FuzzWire"
)

WORK=""           # temp dir with broker/Redis data and logs; deleted at exit
PREFETCH_PID=""   # the downloads that run beside lint
KAFKA_PID=""      # process (group) ids of what this script started
REDIS_PID=""
GO_PID=""
WAITKAFKA_PID=""
KAFKA_DIR=""
declare -a PG_STOP=()  # the command that stops --clients-postgres's server
declare -a PHASES=()  # "name|seconds|note", in order, for the summary
START_US=""

# ---------------------------------------------------------------- helpers

log() { # log PHASE MESSAGE...
	local phase="$1"
	shift
	printf '%(%H:%M:%S)T [test.sh %s] %s\n' -1 "$phase" "$*" >&2
}

die() { # die PHASE MESSAGE...
	log "$@"
	exit 1
}

now_us() {
	local t="${EPOCHREALTIME/[.,]/}"
	printf '%s' "$t"
}

secs_since() { # secs_since START_US -> "12.3"
	local d=$(($(now_us) - $1))
	printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000))
}

phase_done() { # phase_done NAME START_US [NOTE]
	local secs
	secs="$(secs_since "$2")"
	PHASES+=("$1|$secs|${3:-}")
	log "$1" "done in ${secs}s${3:+ ($3)}"
}

# free_ports N: prints N distinct free TCP ports on 127.0.0.1, one per line.
# All sockets are bound at once so the ports differ from each other.
free_ports() {
	python3 - "$1" <<-'EOF'
		import socket, sys
		socks = []
		for _ in range(int(sys.argv[1])):
		    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
		    s.bind(("127.0.0.1", 0))
		    socks.append(s)
		for s in socks:
		    print(s.getsockname()[1])
		    s.close()
	EOF
}

# stop_group NAME PID [SECS]: SIGTERM to the process group PID (started
# with setsid; the process alone if it leads no group), SIGKILL after SECS
# (default 15), then reap it.
stop_group() {
	local name="$1" pid="$2" grace="${3:-15}" target i
	[[ -n "$pid" ]] || return 0
	target="-$pid"
	kill -0 -- "$target" 2>/dev/null || target="$pid"
	if kill -0 -- "$target" 2>/dev/null; then
		if [[ "$target" == -* ]]; then
			log cleanup "stopping $name (process group $pid)"
		else
			log cleanup "stopping $name (pid $pid)"
		fi
		kill -TERM -- "$target" 2>/dev/null || true
		for ((i = 0; i < grace * 10; i++)); do
			kill -0 -- "$target" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 -- "$target" 2>/dev/null; then
			log cleanup "$name did not stop within ${grace}s after SIGTERM: SIGKILL"
			kill -KILL -- "$target" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				kill -0 -- "$target" 2>/dev/null || break
				sleep 0.1
			done
		fi
	fi
	wait "$pid" 2>/dev/null || true
}

print_summary() {
	local entry name secs note total
	((${#PHASES[@]})) || return 0
	total="$(secs_since "$START_US")"
	{
		echo "---------------------------------------------------------------"
		echo "test.sh timings:"
		for entry in "${PHASES[@]}"; do
			IFS='|' read -r name secs note <<<"$entry"
			printf '  %-26s %7ss  %s\n' "$name" "$secs" "$note"
		done
		printf '  %-26s %7ss\n' "total" "$total"
		echo "---------------------------------------------------------------"
	} >&2
}

cleanup() {
	local rc=$?
	trap - EXIT
	trap '' INT TERM # cleanup is bounded; let it finish
	set +e
	local t
	t="$(now_us)"
	if [[ -n "$WAITKAFKA_PID" ]]; then
		kill "$WAITKAFKA_PID" 2>/dev/null
		wait "$WAITKAFKA_PID" 2>/dev/null
	fi
	if [[ -n "$PREFETCH_PID" ]]; then # the downloads beside lint, and pip, npm or mvn under them
		pkill -P "$PREFETCH_PID" 2>/dev/null
		kill "$PREFETCH_PID" 2>/dev/null
		wait "$PREFETCH_PID" 2>/dev/null
	fi
	stop_group "go test" "$GO_PID"
	# The broker's data is this run's alone: a controlled shutdown of its
	# thousands of topics took over 15 s, and nothing needs it.
	stop_group "Kafka broker" "$KAFKA_PID" 3
	stop_group "Redis" "$REDIS_PID"
	if ((${#PG_STOP[@]})); then
		"${PG_STOP[@]}" >/dev/null 2>&1
	fi
	# Safety net: no broker JVM of this run may outlive it.
	if [[ -n "$KAFKA_DIR" ]]; then
		local left
		left="$(pgrep -f -- "$KAFKA_DIR/server.properties" || true)"
		if [[ -n "$left" ]]; then
			log cleanup "broker processes still running ($left): SIGKILL"
			# shellcheck disable=SC2086 # one pid per word
			kill -KILL $left 2>/dev/null
		fi
	fi
	if [[ -n "$WORK" && -d "$WORK" ]]; then
		rm -rf -- "$WORK"
	fi
	if [[ -n "$KAFKA_PID$REDIS_PID" ]]; then
		PHASES+=("cleanup|$(secs_since "$t")|")
	fi
	print_summary
	if ((rc == 0)); then
		log main "PASS"
	else
		log main "FAIL (exit status $rc)"
	fi
	exit "$rc"
}

on_signal() { # on_signal NAME NUMBER
	log main "caught SIG$1: stopping"
	exit $((128 + $2))
}

# run_bg_wait NAME CMD...: runs CMD in its own process group and waits for
# it in a way that lets INT/TERM traps run at once (a foreground command
# would delay them until it ends). Returns the command's exit status.
run_bg_wait() {
	local rc=0
	setsid "$@" </dev/null &
	GO_PID=$!
	wait "$GO_PID" || rc=$?
	GO_PID=""
	return "$rc"
}

# ---------------------------------------------------------------- phases

preflight() {
	local tool
	for tool in go python3 setsid; do
		command -v "$tool" >/dev/null || die preflight "$tool not found on PATH"
	done
	if [[ -z "${FVSQL_TEST_KAFKA:-}" ]]; then
		JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
		command -v "$JAVA" >/dev/null || die preflight "java not found (Kafka $KAFKA_VERSION needs Java 17+; set JAVA_HOME)"
		local v
		v="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
		[[ "$v" =~ ^[0-9]+$ && "$v" -ge 17 ]] || die preflight "$JAVA is Java '${v:-?}'; the Kafka $KAFKA_VERSION broker needs Java 17+"
	fi
}

# staticcheck_ok: the cached staticcheck is the pinned version, built by the
# Go on PATH (one built by an older Go may not load packages of a newer one).
staticcheck_ok() {
	[[ -x "$STATICCHECK" ]] || return 1
	local info
	info="$(go version -m "$STATICCHECK" 2>/dev/null)" || return 1
	[[ "$(head -n1 <<<"$info")" == "$STATICCHECK: $(go env GOVERSION)" ]] || return 1
	grep -Eq "^[[:space:]]+mod[[:space:]]+$STATICCHECK_MODULE[[:space:]]+$STATICCHECK_VERSION([[:space:]]|\$)" <<<"$info"
}

install_staticcheck() {
	local t
	t="$(now_us)"
	mkdir -p "$STATICCHECK_DIR"
	# One install at a time per cache dir (parallel runs of this script).
	exec 8>"$STATICCHECK_DIR/.lock"
	if command -v flock >/dev/null; then
		flock -w 900 8 || die lint "could not lock $STATICCHECK_DIR/.lock within 15 min"
	fi
	if staticcheck_ok; then
		exec 8>&-
		phase_done "staticcheck install" "$t" "cached: $STATICCHECK"
		return
	fi
	log lint "installing $STATICCHECK_MODULE/cmd/staticcheck@$STATICCHECK_VERSION into $STATICCHECK_DIR"
	local tmp="$STATICCHECK_DIR/tmp.$$" ilog="$WORK/staticcheck-install.log"
	rm -rf -- "$tmp"
	if ! GOBIN="$tmp" go install "$STATICCHECK_MODULE/cmd/staticcheck@$STATICCHECK_VERSION" >"$ilog" 2>&1; then
		rm -rf -- "$tmp"
		tail -n 40 "$ilog" >&2
		die lint "go install staticcheck@$STATICCHECK_VERSION failed"
	fi
	mv -f -- "$tmp/staticcheck" "$STATICCHECK"
	rm -rf -- "$tmp"
	exec 8>&-
	staticcheck_ok || die lint "$STATICCHECK is not $STATICCHECK_VERSION built by $(go env GOVERSION) after the install"
	phase_done "staticcheck install" "$t" "installed $STATICCHECK_VERSION"
}

# findings FILE: "N findings in dir (n), dir (n)" for the distinct
# file:line findings in FILE (vet and staticcheck print some twice, once per
# test variant of a package); empty when there are none.
findings() {
	local lines
	lines="$(sed -En 's#^(vet: )?(\./)?([^[:space:]:]+\.go:[0-9]+(:[0-9]+)?:.*)#\3#p' "$1" | sort -u)"
	[[ -n "$lines" ]] || return 0
	printf '%d findings in ' "$(grep -c '' <<<"$lines")"
	cut -d: -f1 <<<"$lines" | xargs -n1 dirname | sort | uniq -c |
		awk '{ printf "%s%s (%d)", (NR > 1 ? ", " : ""), $2, $1 }'
}

# lint_one NAME OUT CMD...: runs CMD, printing its output, and records the
# phase NAME; returns non-zero when CMD failed or printed anything but the
# go command's module downloads (a fresh machine's first run).
lint_one() {
	local name="$1" out="$2" t rc=0 dirs
	shift 2
	t="$(now_us)"
	log lint "$*"
	run_bg_wait "$@" >"$out.all" 2>&1 || rc=$?
	grep -Ev '^go: (downloading|extracting|finding) ' "$out.all" >"$out" || true
	if ((rc == 0)) && [[ ! -s "$out" ]]; then
		phase_done "$name" "$t" "clean"
		return 0
	fi
	cat "$out.all" >&2
	dirs="$(findings "$out")"
	phase_done "$name" "$t" "FAILED, exit status $rc: ${dirs:-$(grep -c '' "$out") lines of output}"
	return 1
}

# lint: go vet and staticcheck over the whole module, both run even when the
# first fails. Findings fail the run before any service starts.
lint() {
	if [[ "${FVSQL_LINT:-1}" == 0 ]]; then
		if [[ -z "${CI:-}" ]]; then
			log lint "FVSQL_LINT=0: skipping go vet and staticcheck"
			return 0
		fi
		log lint "FVSQL_LINT=0 ignored: CI is set, so go vet and staticcheck run"
	fi
	install_staticcheck
	local failed=0
	lint_one "go vet" "$WORK/vet.out" go vet ./... || failed=1
	lint_one "staticcheck" "$WORK/staticcheck.out" "$STATICCHECK" ./... || failed=1
	if ((failed)); then
		die lint "go vet or staticcheck reported findings (see above and the timings); fix them (FVSQL_LINT=0 skips this phase locally)"
	fi
}

# fuzz: runs each of FUZZ_TARGETS for FUZZ_TIME (plus the seed corpus and
# the instrumented build, cached by Go after the first run). A failing input
# fails the run: go writes it to <package>/testdata/fuzz/<target>/, where
# `go test` runs it from then on; commit it with the fix.
fuzz() {
	if [[ "${FVSQL_FUZZ:-1}" == 0 ]]; then
		if [[ -z "${CI:-}" ]]; then
			log fuzz "FVSQL_FUZZ=0: skipping the fuzz phase"
			return 0
		fi
		log fuzz "FVSQL_FUZZ=0 ignored: CI is set, so the fuzz phase runs"
	fi
	local entry pkg target t rc failed=0
	for entry in "${FUZZ_TARGETS[@]}"; do
		read -r pkg target <<<"$entry"
		rc=0
		t="$(now_us)"
		log fuzz "go test -run '^\$' -fuzz '^$target\$' -fuzztime $FUZZ_TIME $pkg"
		run_bg_wait go test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZ_TIME" "$pkg" || rc=$?
		if ((rc != 0)); then
			failed=1
			log fuzz "$target failed: a failing input is in $pkg/testdata/fuzz/$target/ (go test -run '$target/<file>' $pkg runs it again); commit it with the fix"
		fi
		phase_done "fuzz $target" "$t" "exit status $rc"
	done
	return "$failed"
}

# kafka_cache_ok: the cached jars are complete and were fetched with the
# current pom and version.
kafka_cache_ok() {
	[[ -f "$KAFKA_MARKER" ]] || return 1
	local want_pom have_pom jar
	want_pom="$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)"
	have_pom="$(sed -n 's/^pom-sha256=//p' "$KAFKA_MARKER")"
	[[ "$want_pom" == "$have_pom" ]] || return 1
	grep -qx "kafka-version=$KAFKA_VERSION" "$KAFKA_MARKER" || return 1
	while IFS= read -r jar; do
		[[ -s "$KAFKA_LIBS/$jar" ]] || return 1
	done < <(sed -n 's/^jar=//p' "$KAFKA_MARKER")
	[[ -s "$KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar" ]]
}

fetch_kafka() {
	local t
	t="$(now_us)"
	mkdir -p "$KAFKA_HOME"
	# One fetch at a time per cache dir (parallel runs of this script).
	exec 9>"$KAFKA_HOME/.lock"
	if command -v flock >/dev/null; then
		flock -w 900 9 || die maven "could not lock $KAFKA_HOME/.lock within 15 min"
	fi
	if kafka_cache_ok; then
		exec 9>&-
		phase_done "maven fetch" "$t" "cached: $KAFKA_LIBS"
		return
	fi
	command -v mvn >/dev/null || die maven "mvn not found on PATH (needed once to fetch the Kafka jars)"
	log maven "fetching Kafka $KAFKA_VERSION broker jars from Maven Central into $KAFKA_LIBS"
	local tmp="$KAFKA_LIBS.tmp" mlog="$WORK/maven.log" attempt
	for attempt in 1 2 3; do
		rm -rf -- "$tmp"
		if mvn -B -q -Dstyle.color=never -f "$KAFKA_POM" \
			-Dmaven.repo.local="$MAVEN_REPO" \
			-Dkafka.version="$KAFKA_VERSION" \
			-Dkafka.libs.dir="$tmp" \
			dependency:copy-dependencies >"$mlog" 2>&1; then
			break
		fi
		log maven "attempt $attempt failed; last lines of the Maven log:"
		tail -n 40 "$mlog" >&2
		((attempt < 3)) || die maven "could not fetch the Kafka jars"
		sleep $((attempt * 5))
	done
	[[ -s "$tmp/kafka_2.13-$KAFKA_VERSION.jar" ]] || die maven "kafka_2.13-$KAFKA_VERSION.jar missing after the fetch"
	rm -rf -- "$KAFKA_LIBS"
	mv -- "$tmp" "$KAFKA_LIBS"
	{
		echo "kafka-version=$KAFKA_VERSION"
		echo "pom-sha256=$(sha256sum "$KAFKA_POM" | cut -d' ' -f1)"
		(cd "$KAFKA_LIBS" && find . -maxdepth 1 -name '*.jar' -printf 'jar=%f\n' | sort)
	} >"$KAFKA_MARKER.tmp"
	mv -- "$KAFKA_MARKER.tmp" "$KAFKA_MARKER"
	exec 9>&-
	phase_done "maven fetch" "$t" "downloaded $(grep -c '^jar=' "$KAFKA_MARKER") jars, $(du -sh "$KAFKA_LIBS" | cut -f1)"
}

build_waitkafka() {
	if [[ ! -x "$WORK/bin/waitkafka" ]]; then
		go build -o "$WORK/bin/waitkafka" ./tests/testenv/cmd/waitkafka
	fi
}

# wait_kafka ADDR TIMEOUT_SECONDS [PID]: waits until the cluster answers; with
# PID, fails as soon as that process exits.
wait_kafka() {
	local addr="$1" timeout="$2" pid="${3:-}" rc=0
	"$WORK/bin/waitkafka" -brokers "$addr" -timeout "${timeout}s" >"$WORK/waitkafka.out" 2>&1 &
	WAITKAFKA_PID=$!
	while kill -0 "$WAITKAFKA_PID" 2>/dev/null; do
		if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
			kill "$WAITKAFKA_PID" 2>/dev/null || true
			wait "$WAITKAFKA_PID" 2>/dev/null || true
			WAITKAFKA_PID=""
			return 3
		fi
		sleep 0.2
	done
	wait "$WAITKAFKA_PID" || rc=$?
	WAITKAFKA_PID=""
	return "$rc"
}

start_kafka() {
	local t port cport cid
	t="$(now_us)"
	KAFKA_DIR="$WORK/kafka"
	mkdir -p "$KAFKA_DIR/data"
	{ read -r port && read -r cport; } < <(free_ports 2)
	cat >"$KAFKA_DIR/server.properties" <<-EOF
		# Single-node KRaft test broker written by scripts/test.sh.
		process.roles=broker,controller
		node.id=1
		listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
		advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
		listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
		inter.broker.listener.name=PLAINTEXT
		controller.listener.names=CONTROLLER
		controller.quorum.bootstrap.servers=127.0.0.1:$cport
		log.dirs=$KAFKA_DIR/data
		num.partitions=1
		default.replication.factor=1
		min.insync.replicas=1
		offsets.topic.replication.factor=1
		offsets.topic.num.partitions=1
		transaction.state.log.replication.factor=1
		transaction.state.log.min.isr=1
		transaction.state.log.num.partitions=1
		share.coordinator.state.topic.replication.factor=1
		share.coordinator.state.topic.min.isr=1
		group.initial.rebalance.delay.ms=0
		auto.create.topics.enable=false
		delete.topic.enable=true
		log.cleaner.enable=true
		num.network.threads=2
		num.io.threads=4
		num.recovery.threads.per.data.dir=1
	EOF
	# A random Kafka Uuid (URL-safe base64 of 16 bytes). Like Kafka's own
	# Uuid.randomUuid, never one starting with '-', which the tool's argument
	# parser would take for an option.
	cid="$(python3 -c '
import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    if not s.startswith("-"):
        print(s)
        break
')"
	log kafka "formatting KRaft storage (cluster id $cid, standalone controller quorum)"
	if ! "$JAVA" -Xmx256m -Dlog4j2.configurationFile="$KAFKA_LOG4J" -cp "$KAFKA_LIBS/*" \
		kafka.tools.StorageTool format --standalone --cluster-id "$cid" \
		--config "$KAFKA_DIR/server.properties" >"$KAFKA_DIR/format.log" 2>&1; then
		tail -n 40 "$KAFKA_DIR/format.log" >&2
		die kafka "kafka-storage format failed"
	fi

	log kafka "starting broker: PLAINTEXT 127.0.0.1:$port, CONTROLLER 127.0.0.1:$cport, log $KAFKA_DIR/kafka.log"
	# shellcheck disable=SC2086 # KAFKA_HEAP_OPTS holds several JVM options
	(cd "$KAFKA_DIR" && exec setsid "$JAVA" $KAFKA_HEAP_OPTS \
		-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError \
		-Djava.awt.headless=true -Dlog4j2.configurationFile="$KAFKA_LOG4J" \
		-cp "$KAFKA_LIBS/*" kafka.Kafka "$KAFKA_DIR/server.properties" \
		>"$KAFKA_DIR/kafka.log" 2>&1 </dev/null) &
	KAFKA_PID=$!
	build_waitkafka # compiles while the JVM starts
	local rc=0
	wait_kafka "127.0.0.1:$port" "$KAFKA_START_TIMEOUT" "$KAFKA_PID" || rc=$?
	if ((rc != 0)); then
		cat "$WORK/waitkafka.out" >&2 2>/dev/null || true
		log kafka "last lines of the broker log $KAFKA_DIR/kafka.log:"
		tail -n 60 "$KAFKA_DIR/kafka.log" >&2 || true
		if ((rc == 3)); then
			die kafka "the broker exited during startup"
		fi
		die kafka "the broker did not answer within ${KAFKA_START_TIMEOUT}s"
	fi
	cat "$WORK/waitkafka.out" >&2
	local version
	version="$(sed -n 's/.*INFO Kafka version: \([^ ]*\) .*/\1/p' "$KAFKA_DIR/kafka.log" | head -n1)"
	log kafka "Apache Kafka ${version:-?} (broker log) is up at 127.0.0.1:$port"
	FVSQL_TEST_KAFKA="127.0.0.1:$port"
	phase_done "kafka format+start" "$t" "Kafka ${version:-?} at $FVSQL_TEST_KAFKA"
}

use_existing_kafka() {
	local t rc=0
	t="$(now_us)"
	log kafka "FVSQL_TEST_KAFKA=$FVSQL_TEST_KAFKA is set: using that broker, starting none"
	build_waitkafka
	wait_kafka "$FVSQL_TEST_KAFKA" 30 || rc=$?
	cat "$WORK/waitkafka.out" >&2 2>/dev/null || true
	((rc == 0)) || die kafka "the Kafka at FVSQL_TEST_KAFKA=$FVSQL_TEST_KAFKA does not answer"
	phase_done "kafka (existing)" "$t" "$FVSQL_TEST_KAFKA"
}

# export_kafka_libs: tells tests that start a broker of their own
# (tests/fvsqltest.StartKafka) where the cached jars and java are. With
# FVSQL_TEST_KAFKA given, only when the cache is complete and java is found.
export_kafka_libs() {
	if [[ -z "${FVSQL_KAFKA_LIBS:-}" ]]; then
		local java="${JAVA:-${JAVA_HOME:+$JAVA_HOME/bin/}java}"
		if kafka_cache_ok && command -v "$java" >/dev/null; then
			FVSQL_KAFKA_LIBS="$KAFKA_LIBS"
			FVSQL_KAFKA_JAVA="${FVSQL_KAFKA_JAVA:-$(command -v "$java")}"
		fi
	fi
	if [[ -n "${FVSQL_KAFKA_LIBS:-}" ]]; then
		export FVSQL_KAFKA_LIBS
		[[ -z "${FVSQL_KAFKA_JAVA:-}" ]] || export FVSQL_KAFKA_JAVA
		log kafka "FVSQL_KAFKA_LIBS=$FVSQL_KAFKA_LIBS${FVSQL_KAFKA_JAVA:+ FVSQL_KAFKA_JAVA=$FVSQL_KAFKA_JAVA} (for tests that start their own broker)"
	else
		log kafka "FVSQL_KAFKA_LIBS not set: tests that start their own broker will skip"
	fi
}

# redis_ping HOST PORT: one PING with a 2 s bound, without redis-cli.
redis_ping() {
	# shellcheck disable=SC2016 # $1/$2 expand in the inner shell
	timeout 2 bash -c '
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		printf "PING\r\n" >&3
		IFS= read -r line <&3 || exit 1
		[[ "$line" == "+PONG"* ]]' _ "$1" "$2" 2>/dev/null
}

install_redis() {
	local sudo=()
	if [[ "$(id -u)" -ne 0 ]]; then
		command -v sudo >/dev/null || die redis "redis-server is not installed and neither root nor sudo is available to install it"
		sudo=(sudo)
	fi
	command -v apt-get >/dev/null || die redis "redis-server is not installed and apt-get is not available: install Redis or set FVSQL_TEST_REDIS"
	log redis "redis-server not found: installing Debian's redis-server package"
	local alog="$WORK/apt.log"
	if ! { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server; } >"$alog" 2>&1; then
		tail -n 40 "$alog" >&2
		die redis "apt-get install redis-server failed"
	fi
	command -v redis-server >/dev/null || die redis "redis-server still not on PATH after the install"
}

start_redis() {
	local t port i note=""
	t="$(now_us)"
	if ! command -v redis-server >/dev/null; then
		install_redis
		note="installed, "
	fi
	local rdir="$WORK/redis"
	mkdir -p "$rdir"
	port="$(free_ports 1)"
	log redis "starting $(redis-server --version | head -n1) on 127.0.0.1:$port"
	setsid redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--daemonize no --protected-mode yes --dir "$rdir" --logfile '' \
		>"$rdir/redis.log" 2>&1 </dev/null &
	REDIS_PID=$!
	for ((i = 0; i < REDIS_START_TIMEOUT * 10; i++)); do
		if redis_ping 127.0.0.1 "$port"; then
			FVSQL_TEST_REDIS="127.0.0.1:$port"
			phase_done "redis install/start" "$t" "${note}Redis at $FVSQL_TEST_REDIS"
			return
		fi
		if ! kill -0 "$REDIS_PID" 2>/dev/null; then
			cat "$rdir/redis.log" >&2 || true
			die redis "redis-server exited during startup"
		fi
		sleep 0.1
	done
	cat "$rdir/redis.log" >&2 || true
	die redis "redis-server did not answer PING within ${REDIS_START_TIMEOUT}s"
}

use_existing_redis() {
	local t host port
	t="$(now_us)"
	log redis "FVSQL_TEST_REDIS=$FVSQL_TEST_REDIS is set: using that server, starting none"
	host="${FVSQL_TEST_REDIS%:*}"
	port="${FVSQL_TEST_REDIS##*:}"
	redis_ping "$host" "$port" || die redis "no PONG from FVSQL_TEST_REDIS=$FVSQL_TEST_REDIS (a server with a password is not supported)"
	phase_done "redis (existing)" "$t" "$FVSQL_TEST_REDIS"
}

# ------------------------------------------------- client suite toolchains

# client_cache_dir NAME KEYFILE...: prints the cache dir of a toolchain keyed
# by the contents of KEYFILEs ($CACHE_DIR/clients/NAME-<hash>); the caller
# installs into it when it has no .complete marker.
client_cache_dir() {
	local name="$1" hash
	shift
	hash="$(cat "$@" | sha256sum | cut -c1-12)"
	printf '%s/clients/%s-%s' "$CACHE_DIR" "$name" "$hash"
}

# retry3 PHASE LOG CMD...: CMD up to three times (registries time out now
# and then), its output in LOG, the last lines printed when all failed.
retry3() {
	local phase="$1" logf="$2" attempt
	shift 2
	for attempt in 1 2 3; do
		if "$@" >"$logf" 2>&1; then
			return 0
		fi
		log "$phase" "attempt $attempt of '$*' failed; last lines:"
		tail -n 30 "$logf" >&2
		sleep $((attempt * 5))
	done
	return 1
}

# install_venv NAME REQUIREMENTS VAR: a venv with REQUIREMENTS (pinned),
# its python exported as VAR.
install_venv() {
	local name="$1" reqs="$2" var="$3" dir
	dir="$(client_cache_dir "$name" "$reqs")"
	if [[ ! -f "$dir/.complete" ]]; then
		rm -rf -- "$dir"
		mkdir -p "$(dirname "$dir")"
		log clients "installing $reqs into $dir (PyPI)"
		python3 -m venv "$dir" || die clients "python3 -m venv $dir failed (Debian: apt-get install python3-venv)"
		retry3 clients "$WORK/pip-$name.log" "$dir/bin/pip" install --disable-pip-version-check -q -r "$reqs" ||
			die clients "pip install -r $reqs failed"
		touch "$dir/.complete"
	fi
	printf -v "$var" '%s' "$dir/bin/python"
	export "${var?}"
}

# install_clients: what tests/clients drives (see tests/clients/README.md):
# Python drivers, node-postgres and pgjdbc, from PyPI, npm and Maven
# Central, cached by the hash of their pin files.
install_clients() {
	local t dir c="$ROOT/tests/clients"
	t="$(now_us)"
	mkdir -p "$CACHE_DIR/clients"
	exec 7>"$CACHE_DIR/clients/.lock"
	if command -v flock >/dev/null; then
		flock -w 900 7 || die clients "could not lock $CACHE_DIR/clients/.lock within 15 min"
	fi
	install_venv python "$c/python/requirements.txt" FVSQL_CLIENTS_PYTHON
	if [[ -f "$c/superset/requirements.txt" ]]; then
		install_venv superset "$c/superset/requirements.txt" FVSQL_CLIENTS_SUPERSET
	fi

	command -v npm >/dev/null || die clients "npm not found on PATH (node-postgres's suite needs Node.js 20+ and npm)"
	dir="$(client_cache_dir node "$c/node/package.json" "$c/node/package-lock.json")"
	if [[ ! -f "$dir/.complete" ]]; then
		rm -rf -- "$dir"
		mkdir -p "$dir"
		cp "$c/node/package.json" "$c/node/package-lock.json" "$dir/"
		log clients "npm ci into $dir"
		retry3 clients "$WORK/npm.log" npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error ||
			die clients "npm ci failed"
		touch "$dir/.complete"
	fi
	export FVSQL_CLIENTS_NODE="$dir/node_modules"

	command -v mvn >/dev/null || die clients "mvn not found on PATH (needed to fetch pgjdbc)"
	local pgjdbc="$PGJDBC_VERSION"
	FVSQL_CLIENTS_JDBC="$MAVEN_REPO/org/postgresql/postgresql/$pgjdbc/postgresql-$pgjdbc.jar"
	if [[ ! -s "$FVSQL_CLIENTS_JDBC" ]]; then
		log clients "fetching org.postgresql:postgresql:$pgjdbc from Maven Central"
		retry3 clients "$WORK/mvn-pgjdbc.log" mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$MAVEN_REPO" \
			dependency:get -Dartifact="org.postgresql:postgresql:$pgjdbc" -Dtransitive=false ||
			die clients "could not fetch pgjdbc $pgjdbc"
	fi
	export FVSQL_CLIENTS_JDBC
	exec 7>&-
	phase_done "client toolchains" "$t" "python, node, pgjdbc $pgjdbc"
}

# start_postgres: a throw-away PostgreSQL (Debian's postgresql package,
# installed when missing) on a free loopback port with SCRAM and TLS, for
# --clients-postgres; FVSQL_CLIENTS_POSTGRES names its superuser.
start_postgres() {
	local t bin port pgdir="$WORK/postgres" i
	t="$(now_us)"
	bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
	if [[ -z "$bin" ]]; then
		log postgres "PostgreSQL not found: installing Debian's postgresql package"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql >"$WORK/apt-pg.log" 2>&1 ||
			{ tail -n 30 "$WORK/apt-pg.log" >&2; die postgres "apt-get install postgresql failed"; }
		bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
	fi
	port="$(free_ports 1)"
	mkdir -p "$pgdir"
	local run=()
	if [[ "$(id -u)" -eq 0 ]]; then # initdb refuses root
		chmod 755 "$WORK"
		chown postgres "$pgdir"
		run=(runuser -u postgres --)
	fi
	echo secret >"$pgdir/pw"
	"${run[@]}" "$bin/initdb" -D "$pgdir/data" -U fvsql --pwfile="$pgdir/pw" --auth=scram-sha-256 >"$pgdir/initdb.log" 2>&1 ||
		{ cat "$pgdir/initdb.log" >&2; die postgres "initdb failed"; }
	openssl req -new -x509 -days 2 -nodes -subj /CN=localhost -keyout "$pgdir/data/server.key" \
		-out "$pgdir/data/server.crt" >/dev/null 2>&1 || die postgres "openssl could not make a certificate"
	chmod 600 "$pgdir/data/server.key"
	[[ -z "${run[*]}" ]] || chown postgres "$pgdir/data/server.key" "$pgdir/data/server.crt"
	"${run[@]}" "$bin/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w -o "-c listen_addresses=127.0.0.1 -p $port -c ssl=on -c unix_socket_directories=$pgdir" start >/dev/null ||
		{ cat "$pgdir/log" >&2; die postgres "pg_ctl start failed"; }
	PG_STOP=("${run[@]}" "$bin/pg_ctl" -D "$pgdir/data" -m fast stop)
	export FVSQL_CLIENTS_POSTGRES="postgres://fvsql:secret@127.0.0.1:$port/postgres?sslmode=require"
	phase_done "postgres start" "$t" "$("$bin/postgres" --version) at 127.0.0.1:$port"
}

# clients_postgres: --clients-postgres, the client suites against a real
# PostgreSQL instead of fvsql, to check the suites themselves.
clients_postgres() {
	START_US="$(now_us)"
	trap cleanup EXIT
	trap 'on_signal INT 2' INT
	trap 'on_signal TERM 15' TERM
	preflight
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/fvsql-test.XXXXXX")"
	install_clients
	start_postgres
	local t rc=0
	t="$(now_us)"
	log clients "go test -count=1 -v -run '^TestClientSuites\$' ./tests/clients against PostgreSQL"
	run_bg_wait go test -count=1 -v -run '^TestClientSuites$' ./tests/clients || rc=$?
	phase_done "client suites on postgres" "$t" "exit status $rc"
	return "$rc"
}

# ---------------------------------------------------------------- main

# longest_first lists the packages of ./... with the ones whose tests take
# longest first (LONG_PACKAGES, by the last clean-clone run's figures).
# go test starts the packages' runs in the order given, -p (GOMAXPROCS)
# at a time: listed alphabetically, the two longest (tests/exactlyonce,
# tests/sqllogic) started late, and the run ended with one of them
# alone on a CPU where the small packages could have filled the other.
LONG_PACKAGES=(tests/exactlyonce tests/sqllogic tests/pipelines planner tests/clients)
longest_first() {
	local module pkg long l
	module="$(go list -m)"
	local -a all
	mapfile -t all < <(go list ./...)
	for long in "${LONG_PACKAGES[@]}"; do
		for pkg in "${all[@]}"; do
			[[ "$pkg" == "$module/$long" ]] && echo "$pkg"
		done
	done
	for pkg in "${all[@]}"; do
		long=0
		for l in "${LONG_PACKAGES[@]}"; do
			[[ "$pkg" == "$module/$l" ]] && long=1
		done
		((long)) || echo "$pkg"
	done
}

main() {
	START_US="$(now_us)"
	trap cleanup EXIT
	trap 'on_signal INT 2' INT
	trap 'on_signal TERM 15' TERM

	preflight
	WORK="$(mktemp -d "${TMPDIR:-/tmp}/fvsql-test.XXXXXX")"
	log main "repo $ROOT, cache $CACHE_DIR, temp $WORK"

	# The downloads (client toolchains from PyPI, npm and Maven Central;
	# the Kafka jars) run beside lint, which needs the CPU where they need
	# the network and the disk: on a fresh machine they take minutes. The
	# calls after lint find them in the cache (or wait on its lock, while
	# the prefetch still runs) and export what they found; a prefetch
	# that failed is tried again there, its error then stopping the run.
	(
		install_clients
		[[ -n "${FVSQL_TEST_KAFKA:-}" ]] || fetch_kafka
	) >"$WORK/prefetch.log" 2>&1 &
	PREFETCH_PID=$!
	lint
	if wait "$PREFETCH_PID"; then
		log prefetch "the downloads beside lint are done; their log:"
	else
		log prefetch "the downloads beside lint failed (tried again now); their log:"
	fi
	sed 's/^/    /' "$WORK/prefetch.log" >&2
	PREFETCH_PID=""
	install_clients
	if [[ -n "${FVSQL_TEST_KAFKA:-}" ]]; then
		use_existing_kafka
	else
		fetch_kafka
		start_kafka
	fi
	export_kafka_libs
	if [[ -n "${FVSQL_TEST_REDIS:-}" ]]; then
		use_existing_redis
	else
		start_redis
	fi
	export FVSQL_TEST_KAFKA FVSQL_TEST_REDIS
	if [[ -n "${CI:-}" ]]; then
		export CI
	fi
	log main "FVSQL_TEST_KAFKA=$FVSQL_TEST_KAFKA FVSQL_TEST_REDIS=$FVSQL_TEST_REDIS${CI:+ CI=$CI}"

	local -a args=("$@")
	local real_pass="${FVSQL_SQLLOGIC_REAL:-}"
	if ((${#args[@]} == 0)); then
		mapfile -t args < <(longest_first)
		((${#args[@]} > 10)) || die "go test" "go list ./... listed ${#args[@]} packages"
		real_pass="${real_pass:-1}"
	fi

	local t status=0 rc=0
	t="$(now_us)"
	log "go test" "go test -count=1 -timeout $GO_TEST_TIMEOUT -parallel $GO_TEST_PARALLEL ${args[*]}"
	run_bg_wait go test -count=1 -timeout "$GO_TEST_TIMEOUT" -parallel "$GO_TEST_PARALLEL" "${args[@]}" || rc=$?
	phase_done "go tests" "$t" "exit status $rc"
	((rc == 0)) || status=1

	fuzz || status=1

	if [[ "$real_pass" == 1 ]]; then
		rc=0
		t="$(now_us)"
		log sqllogic "FVSQL_SQLLOGIC_BROKER=real go test -count=1 -parallel $SQLLOGIC_PARALLEL -run '^TestSQLLogic\$' ./tests/sqllogic"
		run_bg_wait env FVSQL_SQLLOGIC_BROKER=real go test -count=1 -timeout "$GO_TEST_TIMEOUT" \
			-parallel "$SQLLOGIC_PARALLEL" -run '^TestSQLLogic$' ./tests/sqllogic || rc=$?
		phase_done "sqllogic on real kafka" "$t" "exit status $rc"
		((rc == 0)) || status=1
	else
		log sqllogic "skipping the sqllogic pass on real Kafka (arguments given; FVSQL_SQLLOGIC_REAL=1 forces it)"
	fi
	return "$status"
}

if [[ "${1:-}" == --clients-postgres ]]; then
	clients_postgres
else
	main "$@"
fi
