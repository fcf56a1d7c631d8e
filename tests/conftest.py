"""pytest fixtures against a throwaway PostgreSQL cluster (the helpers are in support.py).

Inside `python -m datatable_roles_lab.devcluster run -- ...` the cluster comes from the exported
PG*/DTR_* variables; otherwise the session starts (and at the end removes) its own.
"""

from __future__ import annotations

import secrets

import pytest

from datatable_roles_lab.devcluster import Cluster
from support import Remote, Scratch, build_world

# Version-independent tests run once in `make test` (on its first PostgreSQL version), not on
# every version: those of a module that says so (``pytestmark = VERSION_INDEPENDENT``: the
# install, the docs, the demo, ...) and every test that asks for no cluster. tests/matrix.sh
# runs `-m version_independent` once and `-m "not version_independent"` on every version.
VERSION_INDEPENDENT = "version_independent"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", VERSION_INDEPENDENT + ": the same on every PostgreSQL version; run once"
        " (a module's own mark, or set on every test that needs no cluster)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "cluster" not in item.fixturenames:
            item.add_marker(VERSION_INDEPENDENT)


@pytest.fixture(scope="session")
def cluster():
    """The cluster: a datatable_roles_lab.devcluster.Cluster (host/port/owner/worker/template,
    owner_password, worker_password, log_path, conninfo(...), superuser_conninfo(db),
    connect_super(db), set_setting(name, value))."""
    if Cluster.env_present():
        yield Cluster.from_env()
        return
    c = Cluster().start()
    mp = pytest.MonkeyPatch()
    for k, v in c.env().items():
        mp.setenv(k, v)
    try:
        yield c
    finally:
        mp.undo()
        c.stop()


@pytest.fixture(scope="session")
def remote():
    """The second server (support.Remote), started when a test first asks for it."""
    r = Remote().start()
    try:
        yield r
    finally:
        r.cluster.stop()


@pytest.fixture
def uid() -> str:
    """A short unique lowercase prefix for cluster-wide names, e.g. 't3f9a0c'."""
    return "t" + secrets.token_hex(3)


@pytest.fixture
def scratch(cluster):
    """What this test makes on the cluster (support.Scratch), dropped when it ends: the
    databases made through it and every role that did not exist when it began."""
    s = Scratch(cluster)
    yield s
    s.clean()


@pytest.fixture
def new_meta_db(scratch):
    """Factory: new_meta_db() -> support.MetaDB, a fresh clone of the template with its own
    instance id and the worker granted."""
    return scratch.meta_db


@pytest.fixture
def meta_db(new_meta_db):
    """A fresh metadata database (see new_meta_db)."""
    return new_meta_db()


@pytest.fixture
def datatable_db(scratch):
    """Factory: datatable_db(prefix="dt") -> support.DataTableDB (dbname, admin_login,
    admin_password): a LOGIN role with a random password, granted to the package owner,
    owning a new database."""
    return scratch.datatable_db


@pytest.fixture
def orders_db(scratch):
    """Factory, the RLS fixture: orders_db({region: role}) -> support.DataTableDB whose admin
    login owns `orders` (support.ORDERS) under row-level security, a policy per region."""
    return scratch.orders_db


@pytest.fixture
def make_world(scratch, meta_db, uid):
    """Factory: make_world(meta=None, tag="", **spec) -> support.World, built by
    support.build_world in meta_db (or `meta`) with cluster-wide names prefixed by
    uid + tag; its sessions are closed when the test ends."""
    worlds = []

    def make(meta=None, tag: str = "", **spec):
        w = build_world(scratch, meta or meta_db, uid + tag, **spec)
        worlds.append(w)
        return w

    yield make
    for w in worlds:
        w.close()
