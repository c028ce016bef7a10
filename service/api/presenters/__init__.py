"""Use-case results -> wire models and responses (URLs, headers): one module per resource."""
