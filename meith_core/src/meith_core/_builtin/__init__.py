"""The `core` plugin: built-in tools that ship inside meith_core."""
