"""Who may call and how listings page: API key scopes and stored hashes, opaque cursors."""
