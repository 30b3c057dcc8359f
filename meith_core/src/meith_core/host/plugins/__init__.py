"""Plugin discovery and the hook contract."""
