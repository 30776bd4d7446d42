# Sourced by scripts/test: a PostgreSQL server on 127.0.0.1 for the gateway's store tests.
#
# - Finds the server binaries (Debian: /usr/lib/postgresql/<v>/bin), installing the
#   Debian `postgresql` package when there are none (as root, non-interactive).
# - Keeps a scratch cluster in $ROLLER_PG_DIR (default /tmp/roller-test-postgres), owned by
#   the `postgres` user (initdb refuses to run as root), listening on 127.0.0.1 only, on
#   a free port, with a random password (scram) and its socket inside the data dir.
# - Idempotent: a server this script started earlier and still running is reused.
# - Exports ROLLER_TEST_POSTGRES_URL=postgresql+psycopg://roller:…@127.0.0.1:PORT/roller_test.
# Any failure stops the test run with a clear message: the PostgreSQL tests never skip.

roller_pg_fail() {
  echo "postgres.sh: $*" >&2
  echo "postgres.sh: the gateway's PostgreSQL tests need this server; they do not skip" >&2
  return 1
}

roller_pg_bindir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ]; then
      echo "$dir"
      return 0
    fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    dir="$(pg_config --bindir 2>/dev/null)"
    if [ -x "$dir/pg_ctl" ] && [ -x "$dir/initdb" ]; then
      echo "$dir"
      return 0
    fi
  fi
  return 1
}

roller_pg_as_postgres() {
  if command -v runuser >/dev/null 2>&1; then
    runuser -u postgres -- "$@"
  else
    su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
  fi
}

roller_pg_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

roller_pg_start() {
  local bindir dir data port password
  if ! bindir="$(roller_pg_bindir)"; then
    if [ "$(id -u)" != 0 ]; then
      roller_pg_fail "no PostgreSQL server binaries, and not root to apt-get install postgresql"
      return 1
    fi
    echo "installing the Debian postgresql package"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null; }; } \
      || { roller_pg_fail "apt-get install postgresql failed"; return 1; }
    bindir="$(roller_pg_bindir)" || { roller_pg_fail "postgresql installed but no server binaries"; return 1; }
  fi
  id postgres >/dev/null 2>&1 || { roller_pg_fail "no 'postgres' system user to own the cluster"; return 1; }

  dir="${ROLLER_PG_DIR:-/tmp/roller-test-postgres}"
  data="$dir/data"
  if [ -f "$dir/port" ] && [ -f "$dir/password" ] \
     && roller_pg_as_postgres "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    port="$(cat "$dir/port")"
    password="$(cat "$dir/password")"
    echo "reusing the PostgreSQL test server on 127.0.0.1:$port"
  else
    if [ -d "$data" ]; then
      roller_pg_as_postgres "$bindir/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    chown postgres: "$dir"
    chmod 700 "$dir"
    password="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
    printf '%s\n' "$password" >"$dir/pwfile"
    chown postgres: "$dir/pwfile"
    roller_pg_as_postgres "$bindir/initdb" -D "$data" -U roller --pwfile="$dir/pwfile" \
      --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
      >"$dir/initdb.log" 2>&1 \
      || roller_pg_as_postgres "$bindir/initdb" -D "$data" -U roller --pwfile="$dir/pwfile" \
           --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C \
           >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; roller_pg_fail "initdb failed"; return 1; }
    rm -f "$dir/pwfile"
    port="$(roller_pg_free_port)"
    roller_pg_as_postgres "$bindir/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $data -c fsync=off -c max_connections=200" \
      start >/dev/null \
      || { tail -20 "$dir/server.log" >&2; roller_pg_fail "the server did not start"; return 1; }
    printf '%s\n' "$port" >"$dir/port"
    printf '%s\n' "$password" >"$dir/password"
    chmod 600 "$dir/port" "$dir/password"
    PGPASSWORD="$password" "$bindir/createdb" -h 127.0.0.1 -p "$port" -U roller roller_test \
      || { roller_pg_fail "createdb failed"; return 1; }
    echo "started a PostgreSQL test server on 127.0.0.1:$port (data in $data)"
  fi
  export ROLLER_TEST_POSTGRES_URL="postgresql+psycopg://roller:$password@127.0.0.1:$port/roller_test"
}

roller_pg_start
