"""The estimator: memory, step time and serving latency as roofline terms, the calibrations
fitted on measured and published evidence, their transfer across GPUs, and the one
``estimate`` function that composes them."""
