"""The vocabulary every answer speaks: GPU specs and catalog records, model architectures,
numeric precisions, benchmark workloads and their metrics."""
