"""The runtime: the in-process host, and (with `meith serve`) the socket server."""
