#!/usr/bin/env bash
# `make test`: sqlfluff once, then every check on each PostgreSQL version named (default
# 15 16 17 18 17-managed: a version with -managed runs in the managed install profile,
# DTR_PROFILE=managed, no superuser step but CREATE EXTENSION dblink), two versions at a time (DTR_MATRIX_JOBS, 1 for one after another), each on
# its own throwaway cluster, each version's output printed whole once all have ended, each
# version's failure not hiding the others'. plpgsql_check runs on 15 only (Debian builds it for 15
# alone); the version-independent pytest tests (tests/conftest.py) on the first version
# only. Then, when 15 is among them, the pg_upgrade from 15 to 18. Ends with one line per
# version and step, and the time each took.
#   tests/matrix.sh 15 17
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${DTR_PYTHON:-.venv/bin/python}
export DTR_PYTHON=$PYTHON
# One client for every server: pg_dump refuses servers newer than itself, and one pg_dump
# keeps the schema snapshot the same on every version.
export DTR_PG_CLIENT_BIN=${DTR_PG_CLIENT_BIN:-$PWD/.pg/client/bin}
results=$(mktemp)
copies=$(mktemp)
trap 'xargs -r rm -rf <"$copies"; rm -f "$copies" "$results"' EXIT
status=0
total=$SECONDS

# A directory of .pg/ as the postgres OS user can run it: as root, when postgres cannot reach
# the checkout (under /root, say), a copy under /tmp.
reachable() {
    local dir=$1 copy
    if [[ $(id -u) == 0 ]] && ! runuser -u postgres -- test -x "$dir/bin/postgres"; then
        copy=$(mktemp -d)  # under /tmp (TMPDIR), which postgres can reach
        echo "$copy" >>"$copies"
        cp -a "$dir/." "$copy/" && chmod -R a+rX "$copy" && chmod a+rx "$copy"
        dir=$copy
    fi
    echo "$dir"
}

server_bin() {
    local major=${1%-managed}
    if [[ $major == 15 ]]; then echo /usr/lib/postgresql/15/bin; else echo "$(reachable "$PWD/.pg/$major")/bin"; fi
}

versions=("$@")
((${#versions[@]})) || versions=(15 16 17 18 17-managed)

echo "== every version" >>"$results"
DTR_RESULTS=$results bash tests/run_checks.sh sqlfluff || status=1
# One version's checks; its lines of the summary go to $2.
run_version() {
    local version=$1 out=$2 start=$SECONDS steps profile=self-hosted
    [[ $version == *-managed ]] && profile=managed
    # The version-independent tests (tests/conftest.py) on the first version only.
    steps=(pg_prove pytest_each)
    [[ $version == "${versions[0]}" ]] && steps=(pg_prove pytest_once pytest_each)
    [[ $version == 15 ]] && steps=(plpgsql_check "${steps[@]}")
    printf '\n########## PostgreSQL %s ##########\n' "$version"
    echo "== PostgreSQL $version ($(server_bin "$version"), profile $profile)" >>"$out"
    local rc=0
    # The second server of tests/test_servers.py: 17 in the managed profile when fetched
    # (`make test` fetches it), else the version under test.
    local second=$(server_bin "$version")
    [[ -x $PWD/.pg/17/bin/postgres ]] && second=$(server_bin 17)
    DTR_SECOND_PG_BIN=$second \
    DTR_PROFILE=$profile DTR_PG_BIN=$(server_bin "$version") DTR_RESULTS=$out \
        "$PYTHON" -m datatable_roles_lab.devcluster run -- bash tests/run_checks.sh "${steps[@]}" \
        || rc=1
    echo "   PostgreSQL $version took $((SECONDS - start)) s" >>"$out"
    return $rc
}

# Two versions at once (each on its own cluster, so no name collides) took 139 s where one
# after the other took 185 s on a 2-CPU machine. Each one's output is kept in a log and
# printed whole, in order, once all have ended.
parallel=${DTR_MATRIX_JOBS:-2}
if ((parallel <= 1)); then
    for version in "${versions[@]}"; do
        run_version "$version" "$results" || status=1
    done
else
    declare -A logs
    for version in "${versions[@]}"; do
        while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
        logs[$version]=$(mktemp -d)
        echo "${logs[$version]}" >>"$copies"
        (
            rc=0
            run_version "$version" "${logs[$version]}/results" >"${logs[$version]}/log" 2>&1 \
                || rc=1
            echo $rc >"${logs[$version]}/rc"
        ) &
    done
    wait
    for version in "${versions[@]}"; do
        cat "${logs[$version]}/log"
        cat "${logs[$version]}/results" >>"$results"
        [[ $(cat "${logs[$version]}/rc" 2>/dev/null) == 0 ]] || status=1
    done
fi
# A major-version upgrade, once: an install in use on 15, pg_upgrade to 18, the superuser
# step, migrate (tests/pg_upgrade_check.py makes its own clusters).
if [[ " ${versions[*]} " == *" 15 "* ]]; then
    printf '\n########## pg_upgrade 15 -> 18 ##########\n'
    start=$SECONDS
    log=$(mktemp)
    DTR_PG_UPGRADE_BIN=$(reachable "$PWD/.pg/client")/bin \
        "$PYTHON" -m pytest -q -p no:cacheprovider tests/pg_upgrade_check.py 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    ((rc == 0)) && word=PASS || { word=FAIL; status=1; }
    printf '== pg_upgrade 15 -> 18\n%-14s %s %4d s  %s\n' pytest "$word" $((SECONDS - start)) \
        "$(tail -n 1 "$log")" >>"$results"
    rm -f "$log"
fi
printf '\n########## results (%d s in all) ##########\n' $((SECONDS - total))
cat "$results"
exit $status
