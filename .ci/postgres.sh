# Sourced by .ci/run: PostgreSQL answering on 127.0.0.1, and TEST_DATABASE_URL exported for a role
# that may create and drop databases. The port and the Debian cluster's name are settings only so
# that the branch for a cluster that asks for a password can be run against a second, fresh cluster
# (docs/decisions.md, "CI fails on a missing service"); CI uses the machine's own, on 5432.
pg_port="${TOKENPROXY_CI_PG_PORT:-5432}"
pg_cluster="${TOKENPROXY_CI_PG_CLUSTER:-main}"
if ! pg_isready -q -h 127.0.0.1 -p "$pg_port" 2>/dev/null; then
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" "$pg_cluster" start || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$pg_port" && break; sleep 1; done
fi
if ! pg_isready -q -h 127.0.0.1 -p "$pg_port"; then
  echo "PostgreSQL does not answer on 127.0.0.1:$pg_port and could not be started: the PostgreSQL and cluster suites cannot run." >&2
  exit 1
fi
# Each Postgres test file creates and drops its own database; `test` is only the admin entry point.
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  # -w: never prompt for a password (a terminal would wait on it); a refusal takes the branch below.
  if psql -w -h 127.0.0.1 -p "$pg_port" -U postgres -tAc 'SELECT 1' >/dev/null 2>&1; then
    TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/test"
    pg_admin() { psql -w -h 127.0.0.1 -p "$pg_port" -U postgres "$@"; }
  else
    # A fresh Debian cluster asks for a password over TCP: a role of CI's own, made over the local
    # socket as the postgres user, with a password the tests' URL carries (a superuser: suites end
    # other sessions and read pg_locks).
    pg_admin() { runuser -u postgres -- psql -p "$pg_port" "$@"; }
    pg_admin -v ON_ERROR_STOP=1 -qc "DO \$\$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tokenproxy_ci') THEN
          CREATE ROLE tokenproxy_ci LOGIN SUPERUSER PASSWORD 'tokenproxy-ci';
        END IF;
      END \$\$" >/dev/null
    TEST_DATABASE_URL="postgres://tokenproxy_ci:tokenproxy-ci@127.0.0.1:$pg_port/test"
  fi
  pg_admin -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 ||
    pg_admin -c 'CREATE DATABASE test' >/dev/null
fi
export TEST_DATABASE_URL
