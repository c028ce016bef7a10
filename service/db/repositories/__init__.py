"""Repositories: the only code that speaks SQL. Each takes the unit of work's session, returns
core types (``service.core``) or plain values, flushes when it writes and never commits.

One module per aggregate: ``catalog`` (GPUs, aliases, prices, FX), ``benchmarks`` (runs,
results, fingerprints, pending GPUs, alerts, idempotency records: ingestion and the outlier
test; reads in ``benchmark_queries``, admin actions in ``benchmark_admin``), ``keys`` (API
keys), ``watermarks`` (the data-version row)."""
