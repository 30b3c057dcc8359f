"""The distribution version, kept in one place without importing importlib.metadata (start-up cost)."""

__version__ = "0.1.0"
