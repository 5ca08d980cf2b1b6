#!/usr/bin/env bash
# Start the local PostgreSQL server the leaderboard tests use (127.0.0.1:5432), when installed.
# Tests that need it skip with a message when it is not reachable.
set -u
if command -v pg_lsclusters >/dev/null 2>&1; then
  pg_lsclusters -h 2>/dev/null | while read -r ver cluster _port status _rest; do
    [ "$status" = online ] || pg_ctlcluster "$ver" "$cluster" start >/dev/null 2>&1 || true
  done
  for _ in $(seq 1 20); do pg_isready -h 127.0.0.1 -q 2>/dev/null && break; sleep 0.5; done
  if pg_isready -h 127.0.0.1 -q 2>/dev/null; then
    su postgres -c "psql -q -tc \"SELECT 1 FROM pg_roles WHERE rolname='h2hmem'\" | grep -q 1 || psql -q -c \"CREATE ROLE h2hmem LOGIN PASSWORD 'h2hmem' CREATEDB\"" >/dev/null 2>&1 || true
    su postgres -c "psql -q -tc \"SELECT 1 FROM pg_database WHERE datname='h2hmem_test'\" | grep -q 1 || createdb -O h2hmem h2hmem_test" >/dev/null 2>&1 || true
  fi
fi
exit 0
