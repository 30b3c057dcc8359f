"""The host: the in-process runtime, plugin discovery and loading, the built-in plugin, settings and logs."""
