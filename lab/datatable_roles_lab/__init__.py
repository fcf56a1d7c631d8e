"""The lab of datatable-roles: what develops, shows and measures the package, outside it.

- ``devcluster``: throwaway PostgreSQL clusters for the tests, the demo and the bench
  (``python -m datatable_roles_lab.devcluster run|schema``).
- ``pgbouncer``: a real PgBouncer in front of a devcluster (tests, bench).
- ``demo``: the tour of ``make demo``.
- ``bench``: ``make bench`` (``python -m datatable_roles_lab.bench``).

It imports the product (``datatable_roles``); the product never imports it. The wheel of
``pip install ./python`` holds none of it.
"""
