#!/usr/bin/env bash
# Elasticsearch (one node, security off) on loopback, for tests and local runs.
#
#   deploy/engines/elasticsearch.sh start    fetch (cached), start on a fresh data dir, wait until the cluster is
#                                            yellow/green; prints the URL to export on stdout (progress goes to stderr):
#                                              export ELASTICSEARCH_URL="$(deploy/engines/elasticsearch.sh start)"
#   deploy/engines/elasticsearch.sh stop     stop the node this script started (pid file), wait until it is gone,
#                                            delete its data dir (logs stay until `clean`)
#   ES_KEEP_DATA=1 ... stop / start          stop keeping the data dir; start again on it (a restart with the same
#                                            data, for fault tests); without a kept data dir start uses a fresh one
#   deploy/engines/elasticsearch.sh clean    stop, then delete the instance directory (logs included)
#   deploy/engines/elasticsearch.sh status   exit 0 when the instance runs and answers (prints its URL), 1 otherwise
#   deploy/engines/elasticsearch.sh fetch    only fetch, unpack and prepare the distribution
#   deploy/engines/elasticsearch.sh env      print ELASTICSEARCH_URL=... for this instance
#
# What it runs: the `org.elasticsearch.distribution.integ-test-zip:elasticsearch` zip from Maven Central
# (fetched with `mvn dependency:copy`; no docker needed). That archive is the server with the transport and
# x-pack security modules only: no `analysis-common`, so no `english` analyzer and no `stemmer`/`snowball`
# token filters. `fetch` therefore also compiles a one-class stable analysis plugin against the distribution's
# own jars, `svc-english-stem`, which exposes Lucene's Snowball English stemmer (the stemmer of PostgreSQL's
# `english` configuration) as the token filter `svc_english_stem`. The text-index adapter
# (search/src/engines/es.ts) uses it when present (see docs/search.md).
#
# Elasticsearch refuses to run as root: when this script runs as root, the node runs as ES_RUN_USER (default
# `nobody`), and the default cache moves to /var/cache/svc-engines because that user cannot read /root.
#
# Variables:
#   ES_PORT (9200)               HTTP port on 127.0.0.1; one instance per port
#   ES_TRANSPORT_PORT (port+100) transport port on 127.0.0.1
#   ES_VERSION (9.5.0)           integ-test-zip version (9.x needs Java 21+, 8.x Java 17+); match the client major
#   ES_HEAP_MIN / ES_HEAP_MAX    -Xms / -Xmx (512m / 1g)
#   ES_JAVA_HOME                 the JDK to run (default: the newest JDK under /usr/lib/jvm, or JAVA_HOME, that is
#                                new enough: 21+ for 9.x; for 8.x Java 17 is preferred)
#   ES_STATE_DIR                 instance directory (pid file, config, data, logs); default ${TMPDIR:-/tmp}/svc-elasticsearch-<port>
#   ENGINES_CACHE                where the fetched distribution is kept (default ~/.cache/svc-engines; as root
#                                /var/cache/svc-engines)
#   ES_RUN_USER (nobody)         the user the node runs as when this script runs as root
#   ES_START_TIMEOUT (180)       seconds to wait for the cluster to answer yellow/green
#   ES_KEEP_DATA (unset)         1: `stop` keeps the data dir and `start` reuses it (see above)
set -euo pipefail

ES_VERSION="${ES_VERSION:-9.5.0}"
MAJOR="${ES_VERSION%%.*}"
PORT="${ES_PORT:-9200}"
TPORT="${ES_TRANSPORT_PORT:-$((PORT + 100))}"
HEAP_MIN="${ES_HEAP_MIN:-512m}"
HEAP_MAX="${ES_HEAP_MAX:-1g}"
TIMEOUT="${ES_START_TIMEOUT:-180}"
URL="http://127.0.0.1:$PORT"
if [[ "$(id -u)" == 0 ]]; then
  RUN_USER="${ES_RUN_USER:-nobody}"
  CACHE="${ENGINES_CACHE:-/var/cache/svc-engines}"
else
  RUN_USER=""
  CACHE="${ENGINES_CACHE:-$HOME/.cache/svc-engines}"
fi
ES_HOME="$CACHE/elasticsearch-$ES_VERSION"
STATE="${ES_STATE_DIR:-${TMPDIR:-/tmp}/svc-elasticsearch-$PORT}"
PIDFILE="$STATE/elasticsearch.pid"
LOG="$STATE/start.log"
PLUGIN="svc-english-stem"

say() { echo "elasticsearch.sh[$PORT]: $*" >&2; }
die() { say "$*"; exit 1; }

java_major() { # prints the feature version of the JDK at $1 (from its `release` file)
  local v
  v="$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null || true)"
  echo "${v:-0}"
}

pick_java() {
  if [[ -n "${ES_JAVA_HOME:-}" ]]; then echo "$ES_JAVA_HOME"; return; fi
  local min=21; [[ "$MAJOR" == 8 ]] && min=17
  local best="" bestv=0 d v
  for d in ${JAVA_HOME:-} /usr/lib/jvm/*; do
    [[ -x "$d/bin/java" && -x "$d/bin/javac" && ! -L "$d" ]] || continue
    v="$(java_major "$d")"
    ((v >= min)) || continue
    if [[ "$MAJOR" == 8 && "$v" == 17 ]]; then echo "$d"; return; fi
    if ((v > bestv)); then best="$d"; bestv="$v"; fi
  done
  [[ -n "$best" ]] || die "no JDK $min+ found under /usr/lib/jvm (set ES_JAVA_HOME); Elasticsearch $ES_VERSION needs Java $min+"
  echo "$best"
}

as_run_user() { # runs a command as the node's user (ourselves unless root)
  if [[ -n "$RUN_USER" ]]; then setpriv --reuid="$RUN_USER" --regid="$(id -g "$RUN_USER")" --clear-groups -- "$@"
  else "$@"; fi
}

# The stable analysis plugin (see the header): one TokenFilterFactory, compiled against the distribution's jars.
build_plugin() {
  local jdk="$1" home="$2" work="$3" lib="$2/lib" cp j
  if [[ ! -x "$jdk/bin/javac" || ! -x "$jdk/bin/jar" ]]; then
    say "$jdk has no javac/jar; the $PLUGIN plugin is not built (the adapter then indexes without stemming)"; return 0
  fi
  cp=""
  for j in elasticsearch-plugin-api elasticsearch-plugin-analysis-api lucene-core lucene-analysis-common; do
    local f; f="$(ls "$lib"/$j-[0-9]*.jar 2>/dev/null | head -1)"
    [[ -n "$f" ]] || { say "no $j jar in $lib; the $PLUGIN plugin is not built (the adapter then indexes without stemming)"; return 0; }
    cp="$cp:$f"
  done
  mkdir -p "$work/src/svc/es" "$work/classes" "$home/plugins/$PLUGIN"
  cat >"$work/src/svc/es/EnglishStemFilterFactory.java" <<'EOF'
package svc.es;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.snowball.SnowballFilter;
import org.elasticsearch.plugin.NamedComponent;
import org.elasticsearch.plugin.analysis.TokenFilterFactory;
import org.tartarus.snowball.ext.EnglishStemmer;

/** Lucene's Snowball English stemmer (PostgreSQL's english_stem) as the token filter `svc_english_stem`. */
@NamedComponent("svc_english_stem")
public class EnglishStemFilterFactory implements TokenFilterFactory {
    @Override
    public TokenStream create(TokenStream in) {
        return new SnowballFilter(in, new EnglishStemmer());
    }
}
EOF
  local release=21; [[ "$MAJOR" == 8 ]] && release=17
  "$jdk/bin/javac" --release "$release" -nowarn -cp "${cp#:}" -d "$work/classes" "$work/src/svc/es/EnglishStemFilterFactory.java"
  "$jdk/bin/jar" --create --file "$home/plugins/$PLUGIN/$PLUGIN.jar" -C "$work/classes" .
  cat >"$home/plugins/$PLUGIN/stable-plugin-descriptor.properties" <<EOF
description=Snowball English stemmer token filter svc_english_stem (built by deploy/engines/elasticsearch.sh)
version=1.0.0
name=$PLUGIN
java.version=$release
elasticsearch.version=$ES_VERSION
EOF
  echo '{"org.elasticsearch.plugin.analysis.TokenFilterFactory":{"svc_english_stem":"svc.es.EnglishStemFilterFactory"}}' \
    >"$home/plugins/$PLUGIN/named_components.json"
}

fetch() {
  if [[ -f "$ES_HOME/.complete" ]]; then return 0; fi
  command -v mvn >/dev/null || die "mvn is not installed (apt-get install maven)"
  command -v unzip >/dev/null || die "unzip is not installed"
  mkdir -p "$CACHE"
  chmod 755 "$CACHE" 2>/dev/null || true
  # One fetch at a time per cache (two start commands in parallel).
  exec 9>"$CACHE/.elasticsearch-$ES_VERSION.lock"
  flock 9
  if [[ -f "$ES_HOME/.complete" ]]; then flock -u 9; return 0; fi
  local jdk work
  jdk="$(pick_java)"
  work="$(mktemp -d "$CACHE/.elasticsearch-$ES_VERSION.XXXXXX")"
  say "fetching org.elasticsearch.distribution.integ-test-zip:elasticsearch:$ES_VERSION:zip from Maven Central"
  # 9.x integ-test-zips are published without a pom: Maven warns and copies the zip anyway.
  if ! (cd "$work" && mvn -B -q dependency:copy \
      -Dartifact="org.elasticsearch.distribution.integ-test-zip:elasticsearch:$ES_VERSION:zip" \
      -DoutputDirectory="$work" >"$work/mvn.log" 2>&1); then
    cat "$work/mvn.log" >&2; rm -rf "$work"; die "fetch failed"
  fi
  unzip -q "$work/elasticsearch-$ES_VERSION.zip" -d "$work/unpacked"
  local home="$work/unpacked/elasticsearch-$ES_VERSION"
  [[ -x "$home/bin/elasticsearch" ]] || { rm -rf "$work"; die "unexpected archive layout"; }
  say "building the $PLUGIN analysis plugin with $jdk"
  build_plugin "$jdk" "$home" "$work/plugin" || { rm -rf "$work"; die "plugin build failed"; }
  rm -rf "$ES_HOME"
  mv "$home" "$ES_HOME"
  chmod -R a+rX "$ES_HOME"
  rm -rf "$work"
  touch "$ES_HOME/.complete"
  flock -u 9
  say "cached in $ES_HOME"
}

# The pid in the pid file, when that process is alive and is the node of this instance (never another process
# that reused the pid).
our_pid() {
  [[ -f "$PIDFILE" ]] || return 1
  local pid; pid="$(cat "$PIDFILE" 2>/dev/null)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  # Gone once only a zombie is left. (When the JVM's main thread ends first, the leader shows Z while the
  # process still runs: count its threads.)
  if [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" == Z ]] \
    && (($(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 1) <= 1)); then return 1; fi
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-Djava.io.tmpdir=$STATE/tmp" || return 1
  echo "$pid"
}

health() { # prints the cluster status when the node answers
  curl -s -m 5 "$URL/_cluster/health" 2>/dev/null | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p'
}

answers() { local s; s="$(health)"; [[ "$s" == green || "$s" == yellow ]]; }

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

start() {
  if our_pid >/dev/null && answers; then say "already running (pid $(our_pid))"; echo "$URL"; return 0; fi
  if [[ -f "$PIDFILE" ]]; then stop; fi
  if port_taken "$PORT"; then die "port $PORT is taken by another process (set ES_PORT)"; fi
  if port_taken "$TPORT"; then die "transport port $TPORT is taken by another process (set ES_TRANSPORT_PORT)"; fi
  command -v curl >/dev/null || die "curl is not installed"
  fetch
  local jdk; jdk="$(pick_java)"
  if [[ -n "$RUN_USER" ]] && ! as_run_user test -r "$ES_HOME/bin/elasticsearch"; then
    die "user $RUN_USER cannot read $ES_HOME (Elasticsearch refuses root; set ENGINES_CACHE to a directory it can read)"
  fi
  mkdir -p "$STATE"
  rm -rf "$STATE/config" "$STATE/tmp" "$STATE/logs"
  cp -r "$ES_HOME/config" "$STATE/config"
  mkdir -p "$STATE/tmp" "$STATE/logs"
  # The zip's jvm.options writes gc.log into the working directory; keep it with the instance's logs.
  sed -i "s#file=gc.log#file=$STATE/logs/gc.log#; s#^-XX:+HeapDumpOnOutOfMemoryError#-XX:-HeapDumpOnOutOfMemoryError#" "$STATE/config/jvm.options"
  local data=""
  # ES_KEEP_DATA=1: the data dir a `stop` kept (a restart on the same data), else a fresh one.
  if [[ "${ES_KEEP_DATA:-}" == 1 && -f "$STATE/data-dir" ]]; then data="$(cat "$STATE/data-dir")"; [[ -d "$data" ]] || data=""; fi
  if [[ -z "$data" ]]; then data="$(mktemp -d "$STATE/data.XXXXXX")"; fi
  echo "$data" >"$STATE/data-dir"
  if [[ -n "$RUN_USER" ]]; then chown -R "$RUN_USER:$(id -gn "$RUN_USER")" "$STATE"; fi
  chmod 755 "$STATE"
  say "starting Elasticsearch $ES_VERSION (java $(java_major "$jdk") at $jdk${RUN_USER:+, as $RUN_USER}) on $URL, data in $data"
  : >"$LOG"
  # -d: the launcher returns once the node has started and writes the node's pid with -p.
  if ! (cd "$STATE" && as_run_user env ES_JAVA_HOME="$jdk" ES_PATH_CONF="$STATE/config" ES_TMPDIR="$STATE/tmp" \
      ES_JAVA_OPTS="-Xms$HEAP_MIN -Xmx$HEAP_MAX ${ES_JAVA_OPTS:-}" \
      "$ES_HOME/bin/elasticsearch" -d -p "$PIDFILE" \
      -E cluster.name="svc-engines-$PORT" -E node.name="svc-es-$PORT" \
      -E discovery.type=single-node -E network.host=127.0.0.1 \
      -E http.port="$PORT" -E transport.port="$TPORT" \
      -E path.data="$data" -E path.logs="$STATE/logs" \
      -E xpack.security.enabled=false \
      -E cluster.routing.allocation.disk.threshold_enabled=false \
      -E action.destructive_requires_name=true) >>"$LOG" 2>&1 </dev/null; then
    tail -40 "$LOG" >&2
    stop
    die "the node did not start"
  fi
  local deadline=$((SECONDS + TIMEOUT))
  until answers; do
    if ! our_pid >/dev/null; then tail -40 "$LOG" >&2; tail -40 "$STATE/logs/svc-engines-$PORT.log" >&2 2>/dev/null || true; stop; die "the node exited during start"; fi
    if ((SECONDS > deadline)); then tail -40 "$STATE/logs/svc-engines-$PORT.log" >&2 2>/dev/null || true; stop; die "the cluster did not answer yellow/green in ${TIMEOUT}s"; fi
    sleep 0.5
  done
  say "running (pid $(our_pid), cluster $(health), state $STATE)"
  echo "$URL"
}

stop() {
  local pid
  if pid="$(our_pid)"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 120); do our_pid >/dev/null || break; sleep 0.5; done
    if our_pid >/dev/null; then say "pid $pid ignored SIGTERM for 60 s; killing it"; kill -KILL "$pid" 2>/dev/null || true; fi
    for _ in $(seq 1 40); do our_pid >/dev/null || break; sleep 0.25; done
    if our_pid >/dev/null; then die "pid $pid is still running"; fi
    # The JVM may still be exiting (its cmdline is gone first): wait until it has let go of its ports.
    for _ in $(seq 1 80); do port_taken "$PORT" || port_taken "$TPORT" || break; sleep 0.25; done
    say "stopped (pid $pid)"
  fi
  rm -f "$PIDFILE"
  if [[ -f "$STATE/data-dir" && "${ES_KEEP_DATA:-}" != 1 ]]; then rm -rf "$(cat "$STATE/data-dir")" "$STATE/data-dir"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  clean) ES_KEEP_DATA= stop; rm -rf "$STATE" ;;
  status)
    if pid="$(our_pid)" && answers; then say "running (pid $pid, cluster $(health))"; echo "$URL"
    else say "not running"; exit 1; fi ;;
  fetch) fetch ;;
  env) echo "ELASTICSEARCH_URL=$URL" ;;
  *) echo "usage: $0 start|stop|clean|status|fetch|env" >&2; exit 2 ;;
esac
