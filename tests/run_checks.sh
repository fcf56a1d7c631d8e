#!/usr/bin/env bash
# All checks of `make test`, in order: sqlfluff, plpgsql_check, pg_prove, pytest.
# Run inside `python -m datatable_roles_lab.devcluster run -- bash tests/run_checks.sh`, which
# exports PGHOST/PGPORT/PGUSER (superuser over the socket) and the DTR_* variables.
# Steps can be named: `bash tests/run_checks.sh lint` (sqlfluff alone, no cluster needed),
# `... run -- bash tests/run_checks.sh pytest`; pytest_once and pytest_each are pytest's two
# halves (the version-independent tests, and the rest) as tests/matrix.sh runs them.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON=${DTR_PYTHON:-python3}
PG_CLIENT_BIN=${DTR_PG_CLIENT_BIN:-${DTR_PG_BIN:-/usr/lib/postgresql/15/bin}}
PSQL=("$PG_CLIENT_BIN/psql" -X -v ON_ERROR_STOP=1)

header() { printf '\n===== %s =====\n' "$*"; }

step_sqlfluff() {
    header "sqlfluff lint (postgres dialect, config .sqlfluff)"
    local dirs=() d
    for d in python/datatable_roles/sql tests; do
        [[ -d $d ]] && dirs+=("$d")
    done
    if ((${#dirs[@]} == 0)); then
        echo "no SQL directories"
        return 0
    fi
    # On every CPU (0): 46 s where one process took 78 s on 2 CPUs.
    "$PYTHON" -m sqlfluff lint --nocolor --processes 0 "${dirs[@]}"
}

step_plpgsql_check() {
    header "plpgsql_check (functions owned by $DTR_OWNER)"
    "${PSQL[@]}" -q -d postgres -c 'SET client_min_messages = warning' \
        -c 'DROP DATABASE IF EXISTS dtr_check WITH (FORCE)' \
        -c "CREATE DATABASE dtr_check TEMPLATE $DTR_TEMPLATE_DB"
    "${PSQL[@]}" -q -d dtr_check -c 'CREATE EXTENSION plpgsql_check'
    "${PSQL[@]}" -d dtr_check -v owner="$DTR_OWNER" -f tests/plpgsql_check.sql
    "${PSQL[@]}" -q -d postgres -c 'DROP DATABASE dtr_check WITH (FORCE)'
}

step_pg_prove() {
    header "pg_prove tests/pgtap/*.sql"
    local files=()
    shopt -s nullglob
    files=(tests/pgtap/*.sql)
    shopt -u nullglob
    if ((${#files[@]} == 0)); then
        echo "no pgTAP files"
        return 0
    fi
    # Each file clones dtr_tap_template: the package's template plus pgTAP and tests/pgtap/lib.
    "${PSQL[@]}" -q -d postgres -c 'SET client_min_messages = warning' \
        -c 'DROP DATABASE IF EXISTS dtr_tap_template WITH (FORCE)' \
        -c "CREATE DATABASE dtr_tap_template TEMPLATE $DTR_TEMPLATE_DB OWNER $DTR_OWNER"
    "${PSQL[@]}" -q -d dtr_tap_template -c 'CREATE EXTENSION pgtap' \
        -f tests/pgtap/lib/helpers.sql
    # -j1: the tests create cluster-wide roles.
    pg_prove --psql-bin "$PG_CLIENT_BIN/psql" --ext .sql -j1 --timer --failures --comments \
        -h "$PGHOST" -p "$PGPORT" -U postgres -d postgres "${files[@]}"
}

step_pytest() {
    header "pytest tests/"
    "$PYTHON" -m pytest -q tests
}

# tests/matrix.sh splits pytest: the version-independent tests (tests/conftest.py) once, the
# rest on every version.
step_pytest_once() {
    header "pytest tests/ -m version_independent (once)"
    "$PYTHON" -m pytest -q -m version_independent tests
}

step_pytest_each() {
    header "pytest tests/ -m 'not version_independent' (every version)"
    "$PYTHON" -m pytest -q -m "not version_independent" tests
}

# Every step runs, whatever an earlier one gave; one line per step at the end (and in
# $DTR_RESULTS when set: tests/matrix.sh collects them), and the exit status is 1 when any
# step failed.
steps=("$@")
((${#steps[@]})) || steps=(sqlfluff plpgsql_check pg_prove pytest)
summary=()
status=0
for step in "${steps[@]}"; do
    case $step in
        lint | sqlfluff | plpgsql_check | pg_prove | pytest | pytest_once | pytest_each) ;;
        *)
            echo "unknown step: $step" \
                "(sqlfluff|plpgsql_check|pg_prove|pytest|pytest_once|pytest_each)" >&2
            exit 2
            ;;
    esac
    [[ $step == lint ]] && step=sqlfluff
    if [[ $step != sqlfluff ]]; then
        : "${PGHOST:?run this inside: python -m datatable_roles_lab.devcluster run -- bash $0}"
    fi
    start=$SECONDS
    log=$(mktemp)
    (set -e; "step_$step") 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    detail=$(grep -E '^(Files=|[0-9]+ (passed|failed)|.* (passed|failed)( |,).* in )' "$log" | tail -n 1)
    rm -f "$log"
    if ((rc == 0)); then word=PASS; else word=FAIL; status=1; fi
    summary+=("$(printf '%-14s %s %4d s  %s' "$step" "$word" $((SECONDS - start)) "$detail")")
done
header "summary"
printf '%s\n' "${summary[@]}" | tee -a "${DTR_RESULTS:-/dev/null}"
exit $status
