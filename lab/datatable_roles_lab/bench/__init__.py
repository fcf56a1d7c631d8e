"""``make bench``: the speed ratios of README.md, Benchmarks (``__main__`` runs them)."""
