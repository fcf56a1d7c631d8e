"""``python -m datatable_roles``: the ``datatable-roles`` command line."""

import sys

from .cli import main

sys.exit(main())
