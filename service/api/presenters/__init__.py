"""Presenters: use-case answers (core types and use-case dataclasses) -> wire models, one
module per resource."""
