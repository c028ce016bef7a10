"""Which GPU, how many, which strategy: the recommendation search over the estimator and
the price book."""
