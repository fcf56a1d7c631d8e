"""No function in sql/functions is over ~120 lines (issue 23): a function that long mixes
decisions a reader and plpgsql_check should see apart. Static: it reads the sources, not a
database. A function counts from its CREATE line through the line that closes its dollar
quote (or, for a body written as a bare RETURN, the line that ends it)."""

from __future__ import annotations

import re

from datatable_roles import sources

LIMIT = 120
CREATE = re.compile(r"^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE) ([\w.]+)\s*\(", re.I)
OPEN = re.compile(r"^AS\s+(\$\w*\$)", re.I)


def function_lengths(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, number of lines) of every CREATE FUNCTION or PROCEDURE in text."""
    lines = text.splitlines()
    found = []
    for start, line in enumerate(lines):
        m = CREATE.match(line)
        if not m:
            continue
        end = start
        while end < len(lines):
            opened = OPEN.match(lines[end])
            if opened:
                tag = re.escape(opened.group(1))
                end += 1
                while not re.match(rf"^{tag};?\s*$", lines[end]):
                    end += 1
                break
            if end > start and re.match(r"^RETURN\b.*;\s*$", lines[end], re.I):
                break
            end += 1
        found.append((m.group(1), start + 1, end - start + 1))
    return found


def test_the_counter_counts_a_function_through_its_closing_quote():
    text = ("-- c\nCREATE OR REPLACE FUNCTION a.f(x int)\nRETURNS int\nLANGUAGE sql\nAS $$\n"
            "    SELECT 1\n$$;\n\nCREATE FUNCTION a.g() RETURNS text\nLANGUAGE sql\n"
            "RETURN 'x';\n")
    assert function_lengths(text) == [("a.f", 2, 6), ("a.g", 9, 3)]


def test_no_function_is_over_the_limit():
    files = sources.function_files() + sources.script_files()
    lengths = [(path.relative_to(sources.FUNCTIONS_DIR), name, first, n)
               for path in files
               for name, first, n in function_lengths(path.read_text(encoding="utf-8"))]
    assert len(lengths) > 100, "the counter found too few functions to be reading them right"
    over = sorted(((n, f"{path}:{first} {name}") for path, name, first, n in lengths
                   if n > LIMIT), reverse=True)
    assert not over, (f"functions over {LIMIT} lines (split them):\n"
                      + "\n".join(f"  {n:4d}  {where}" for n, where in over))
