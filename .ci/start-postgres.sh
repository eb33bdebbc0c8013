#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests that need one (the
# PostgreSQL store's conformance suite, the resume property test on it, the
# `troupe db migrate` CLI tests): under target/pg/, on a loopback port, its
# unix socket under target/pg/run. Idempotent: a cluster already running is
# reused. Installs Debian's `postgresql` package when no `initdb` is found
# (apt-get, noninteractive).
#
# The server runs with fsync=off: a throwaway cluster for tests, whose
# commits need not survive power loss (BENCHMARKS.md says so where its
# figures are used).
#
# initdb refuses to run as root (CI runs as root), so the cluster belongs to
# an unprivileged system user, `troupe-pg` (created when missing). Nothing
# is exported: the URL is written to target/pg/url, which the tests read
# (`TROUPE_PG_URL` overrides it), and printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${TROUPE_PG_PORT:-54329}"
DIR="$PWD/target/pg"
DATA="$DIR/data"
SOCK="$DIR/run"
DB=troupe_test

bindir() {
    local b
    for b in /usr/lib/postgresql/*/bin; do
        [ -x "$b/initdb" ] && { echo "$b"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

if ! BIN="$(bindir)"; then
    echo "== postgresql: not found, installing Debian's package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    BIN="$(bindir)"
fi

# The user the cluster runs as: ourselves unless root.
if [ "$(id -u)" = 0 ]; then
    RUN_AS=troupe-pg
    if ! id "$RUN_AS" >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_AS"
    fi
    as_user() { runuser -u "$RUN_AS" -- "$@"; }
else
    RUN_AS="$(id -un)"
    as_user() { "$@"; }
fi

mkdir -p "$DIR" "$SOCK"
if [ "$(id -u)" = 0 ]; then
    chown "$RUN_AS" "$DIR" "$SOCK"
    # The user must reach target/pg through the directories above it (a
    # checkout under /root is not): let others traverse (not list) them.
    d="$DIR"
    while [ "$d" != / ]; do
        d="$(dirname "$d")"
        if ! as_user test -x "$d"; then
            echo "== postgresql: letting $RUN_AS traverse $d (chmod o+x)"
            chmod o+x "$d"
        fi
    done
fi

if [ ! -s "$DATA/PG_VERSION" ]; then
    echo "== postgresql: initdb in $DATA (as $RUN_AS)"
    rm -rf "$DATA"
    as_user "$BIN/initdb" -D "$DATA" -U troupe --auth=trust -E UTF8 --locale=C.UTF-8 >"$DIR/initdb.log"
fi

if as_user "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    echo "== postgresql: reusing the cluster running in $DATA"
else
    echo "== postgresql: starting on 127.0.0.1:$PORT"
    as_user "$BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $SOCK -c fsync=off -c max_connections=200" start >/dev/null
fi

if ! "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U troupe -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
    "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U troupe "$DB"
fi

echo "postgres://troupe@127.0.0.1:$PORT/$DB" >"$DIR/url"
echo "== postgresql: $(cat "$DIR/url") (in target/pg/url)"
