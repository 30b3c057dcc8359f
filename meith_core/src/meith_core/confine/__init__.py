"""What a started process can reach: the confinement plan, the exec wrapper that builds its
walls, the one spawn API, the network gate and forwarder, the planted-git scan, the secret and
protected paths. A layer of its own: it imports `base` only."""
