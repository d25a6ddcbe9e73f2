#!/usr/bin/env bash
# Apache Kafka (KRaft, one combined broker + controller) on loopback, for tests and local runs.
#
#   deploy/engines/kafka.sh start    fetch the jars (cached), format storage on first start, start, wait until it answers
#   deploy/engines/kafka.sh stop     stop the broker this script started (pid file); its data stays for the next start
#   deploy/engines/kafka.sh clean    stop, then delete the instance's data
#   deploy/engines/kafka.sh status   exit 0 when the instance runs and answers
#   deploy/engines/kafka.sh fetch    only fetch the jars
#   deploy/engines/kafka.sh env      print KAFKA_BROKERS=... for this instance
#
# Variables:
#   KAFKA_PORT (9092)              client listener on 127.0.0.1; one instance per port, so tests can run their own
#   KAFKA_CONTROLLER_PORT (port+1) KRaft controller listener
#   KAFKA_VERSION (4.1.1)          org.apache.kafka:kafka_2.13 version fetched from Maven Central
#   KAFKA_HEAP (384m)              -Xmx of the broker
#   KAFKA_STATE_DIR                instance directory (pid file, properties, data, log); default a dir under ${TMPDIR:-/tmp}
#   ENGINES_CACHE                  where fetched jars are kept (default ~/.cache/svc-engines)
#   JAVA_HOME / KAFKA_JAVA          the java to run (Java 17+; default: java on PATH)
#   KAFKA_START_TIMEOUT (180)      seconds to wait for the broker to answer
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.1.1}"
PORT="${KAFKA_PORT:-9092}"
CPORT="${KAFKA_CONTROLLER_PORT:-$((PORT + 1))}"
HEAP="${KAFKA_HEAP:-384m}"
CACHE="${ENGINES_CACHE:-$HOME/.cache/svc-engines}"
LIBS="$CACHE/kafka-$KAFKA_VERSION/libs"
STATE="${KAFKA_STATE_DIR:-${TMPDIR:-/tmp}/svc-kafka-$PORT}"
PIDFILE="$STATE/kafka.pid"
LOG="$STATE/kafka.log"
TIMEOUT="${KAFKA_START_TIMEOUT:-180}"

if [[ -n "${KAFKA_JAVA:-}" ]]; then JAVA="$KAFKA_JAVA"
elif [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"
else JAVA="$(command -v java || true)"; fi

say() { echo "kafka.sh[$PORT]: $*" >&2; }

fetch() {
  if [[ -f "$LIBS/.complete" ]]; then return 0; fi
  command -v mvn >/dev/null || { say "mvn is not installed (apt-get install maven)"; exit 1; }
  local work; work="$(mktemp -d)"
  # A throwaway pom whose dependencies are the broker and a logging binding; Maven resolves the rest.
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>svc.engines</groupId><artifactId>kafka-fetch</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$KAFKA_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  say "fetching kafka_2.13 $KAFKA_VERSION and its runtime dependencies into $LIBS"
  rm -rf "$LIBS" && mkdir -p "$LIBS"
  if ! (cd "$work" && mvn -B -q dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$LIBS" >"$work/mvn.log" 2>&1); then
    cat "$work/mvn.log" >&2; rm -rf "$work" "$LIBS"; say "fetch failed"; exit 1
  fi
  # A logging binding of the slf4j-api version the broker brings (its log tells when it has started).
  local slf4j; slf4j="$(cd "$LIBS" && ls slf4j-api-*.jar | sed -E 's/^slf4j-api-(.*)\.jar$/\1/' | head -1)"
  if ! (cd "$work" && mvn -B -q dependency:copy -Dartifact="org.slf4j:slf4j-simple:$slf4j" -DoutputDirectory="$LIBS" >"$work/mvn.log" 2>&1); then
    cat "$work/mvn.log" >&2; rm -rf "$work" "$LIBS"; say "fetch of slf4j-simple $slf4j failed"; exit 1
  fi
  rm -rf "$work"
  touch "$LIBS/.complete"
}

# The pid file's process is alive and is this instance's broker (not a pid reused by something else).
pid_alive() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid; pid="$(cat "$PIDFILE")"
  kill -0 "$pid" 2>/dev/null && ps -o args= -p "$pid" 2>/dev/null | grep -qF "kafka.Kafka $STATE/server.properties"
}

# True when the broker accepts connections and has logged that it started.
answers() {
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || return 1
  grep -q "Kafka Server started" "$LOG" 2>/dev/null
}

write_props() {
  mkdir -p "$STATE/data"
  cat >"$STATE/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$CPORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CPORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$STATE/data
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=-1
log.segment.bytes=16777216
num.network.threads=2
num.io.threads=2
background.threads=2
log.cleaner.enable=true
EOF
}

java_opts=(-Xmx"$HEAP" -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Djava.awt.headless=true
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info
  -Dorg.slf4j.simpleLogger.showDateTime=true)

start() {
  if pid_alive && answers; then say "already running (pid $(cat "$PIDFILE"))"; return 0; fi
  if pid_alive; then say "pid $(cat "$PIDFILE") exists but does not answer; stopping it first"; stop; fi
  [[ -x "$JAVA" ]] || { say "no java found (set JAVA_HOME; Kafka 4 needs Java 17+)"; exit 1; }
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then say "port $PORT is taken by another process"; exit 1; fi
  fetch
  mkdir -p "$STATE"
  write_props
  if [[ ! -f "$STATE/data/meta.properties" ]]; then
    local cluster; cluster="$("$JAVA" -cp "$LIBS/*" "${java_opts[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
    "$JAVA" -cp "$LIBS/*" "${java_opts[@]}" kafka.tools.StorageTool format --standalone -t "$cluster" -c "$STATE/server.properties" >>"$LOG" 2>&1 \
      || { cat "$LOG" >&2; say "storage format failed"; exit 1; }
  fi
  : >"$LOG"
  nohup "$JAVA" -cp "$LIBS/*" "${java_opts[@]}" kafka.Kafka "$STATE/server.properties" >>"$LOG" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  local deadline=$((SECONDS + TIMEOUT)) child=$!
  until answers; do
    # The child we just started, by pid: its command line is the broker's only once nohup has exec'd java, so
    # pid_alive (which checks it) could call a broker still starting dead (seen once, right after a first fetch).
    if ! kill -0 "$child" 2>/dev/null; then tail -40 "$LOG" >&2; rm -f "$PIDFILE"; say "broker exited during start"; exit 1; fi
    if ((SECONDS > deadline)); then tail -40 "$LOG" >&2; say "broker did not answer in ${TIMEOUT}s"; stop; exit 1; fi
    sleep 0.5
  done
  say "running on 127.0.0.1:$PORT (pid $(cat "$PIDFILE"), state $STATE)"
}

stop() {
  if [[ ! -f "$PIDFILE" ]]; then return 0; fi
  local pid; pid="$(cat "$PIDFILE")"
  if pid_alive; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$pid" 2>/dev/null; then say "pid $pid ignored SIGTERM for 30 s; killing it"; kill -KILL "$pid" 2>/dev/null || true; fi
    for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$PIDFILE"
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  clean)
    stop
    # Only a directory this script made (or an empty one) is deleted.
    if [[ -d "$STATE" ]] && { [[ -f "$STATE/server.properties" ]] || [[ -z "$(ls -A "$STATE")" ]]; }; then rm -rf "$STATE"; fi ;;
  status) if pid_alive && answers; then say "running (pid $(cat "$PIDFILE"))"; else say "not running"; exit 1; fi ;;
  fetch) fetch ;;
  env) echo "KAFKA_BROKERS=127.0.0.1:$PORT" ;;
  *) echo "usage: $0 start|stop|clean|status|fetch|env" >&2; exit 2 ;;
esac
