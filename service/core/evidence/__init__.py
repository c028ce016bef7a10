"""What was measured or published, and how far to trust it: stored results, quarantine,
the latest-measured aggregate, provenance, data versions and the published tables."""
