# datatable-roles: developer and CI entry points.
#   make test    install what is missing (PostgreSQL 16-18 binaries into .pg/), then lint,
#                and plpgsql_check (15) + pg_prove + pytest on a throwaway cluster of each
#                of PG="15 16 17 18 17-managed" (the last: 17 in the managed profile), two at a time
#   make demo    install what is missing, then a tour on a throwaway cluster: per-viewer
#                rows under each kind of default role (the lab's: lab/)
#   make bench   the speed ratios of README.md, on a throwaway cluster (a few minutes; lab/)
#   make lint    sqlfluff only (no cluster)
#   make schema  regenerate sql/schema.sql from the migrations
#   make migration NAME=x  start the next numbered migration, stamped with the digest of
#                sql/functions/ and sql/directory/ (every function change ships with one:
#                docs/operating.md)
#   make clean   remove the virtualenv and caches

VENV ?= .venv
PYTHON ?= python3
APT_PACKAGES := postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl \
                postgresql-15-plpgsql-check pgbouncer
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP := $(VENV)/.deps-installed
DEVCLUSTER := $(VENV)/bin/python -m datatable_roles_lab.devcluster

.PHONY: deps apt-deps pg-bin test demo bench lint schema migration clean

deps: apt-deps $(STAMP)

# Installs only what dpkg does not report installed; `apt-get update` only if that fails.
apt-deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' \
	    || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt-get install:$$missing"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  $(SUDO) apt-get install -y -q --no-install-recommends $$missing \
	    || { $(SUDO) apt-get update -q && \
	         $(SUDO) apt-get install -y -q --no-install-recommends $$missing; }; \
	fi

# The product (python/) and the lab (lab/: throwaway clusters, dev PgBouncer, demo, bench),
# both editable; `pip install ./python` installs the product alone.
$(STAMP): requirements.txt python/pyproject.toml lab/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -r requirements.txt -e python/ -e lab/
	touch $@

# The PostgreSQL versions of `make test` (`make test PG=17` for one; 17-managed: 17 in the
# managed install profile, no superuser step but the extension step).
PG ?= 15 16 17 18 17-managed
PG_CLIENT_BIN := $(CURDIR)/.pg/client/bin

# Server binaries of 16-18 and the 18.x client programs, fetched once into .pg/.
pg-bin: $(STAMP)
	PYTHON=$(VENV)/bin/python bash tools/fetch-postgres.sh client \
	    $(sort $(filter-out 15,$(subst -managed,,$(PG))))

test: deps pg-bin
	DTR_PYTHON=$(VENV)/bin/python bash tests/matrix.sh $(PG)

demo: deps
	$(VENV)/bin/python -m datatable_roles_lab.demo

bench: deps
	$(VENV)/bin/python -m datatable_roles_lab.bench

lint: $(STAMP)
	DTR_PYTHON=$(VENV)/bin/python bash tests/run_checks.sh lint

schema: deps pg-bin
	DTR_PG_CLIENT_BIN=$(PG_CLIENT_BIN) $(DEVCLUSTER) schema --output sql/schema.sql

MIGRATIONS := python/datatable_roles/sql/migrations
migration:
	@test -n "$(NAME)" || { echo "usage: make migration NAME=<what_changes>" >&2; exit 2; }
	@last=$$(cd $(MIGRATIONS) && ls [0-9]*.sql | LC_ALL=C sort | tail -n 1); \
	next=$$(printf '%04d' $$(expr $${last%%_*} + 1)); \
	file=$(MIGRATIONS)/$${next}_$(NAME).sql; \
	digest=$$($(VENV)/bin/python -m datatable_roles.sources); \
	printf -- '-- depends: %s\n-- functions: %s\n-- What this migration changes, and why.\n' \
	    "$${last%.sql}" "$$digest" > $$file; \
	echo "wrote $$file"

clean:
	rm -rf $(VENV) .pytest_cache tests/.pytest_cache .hypothesis python/*.egg-info lab/*.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
