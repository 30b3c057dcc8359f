"""The exec wrapper: builds a confinement's walls in the child of a spawn, then execs the command.

Standard library only (not even `typing`), relative imports only: it runs as a package of its
own under `python -I -S -B` (see `confine.launcher`), long before anything of meith's could be
imported, and the runtime imports the same modules for their constants and the byte relay.
"""
