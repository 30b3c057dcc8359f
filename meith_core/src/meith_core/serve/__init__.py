"""Serving: the asyncio adapters of the sans-IO connection, socket binding, peer credentials, admission, the daemon and its prompt."""
