"""Which GPU, how many, which strategy: the recommendation search over the estimator and
the price book."""

# Bumped whenever the search, ranking or presentation can answer the same question on the same
# data differently; part of a stored answer's id (usecases/recommend.py), so a changed answer is
# stored under a new id instead of hiding behind the old one. CHANGELOG.md lists each bump.
SEARCH_VERSION = "2026.12.04c"
