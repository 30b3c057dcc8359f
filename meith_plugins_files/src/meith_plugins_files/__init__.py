"""meith file tools."""

__version__ = "0.1.0"
