"""Per-repository serialisation of write tools.

Two writes on one repository (two `git_stage` calls, a commit racing a checkpoint restore)
would otherwise collide on `index.lock`. Writes are queued on an asyncio lock keyed by the
repository's resolved common git dir, so linked worktrees of one repository share a lock (they
share refs and objects). Reads take no lock.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from meith_plugins_git.repo import Repo


class RepoLocks:
    def __init__(self) -> None:
        # Weak values: a lock nobody holds or waits for is forgotten.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def lock_for(self, repo: Repo) -> asyncio.Lock:
        lock = self._locks.get(repo.common_dir)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[repo.common_dir] = lock
        return lock

    @asynccontextmanager
    async def hold(self, repo: Repo) -> AsyncIterator[None]:
        """Hold the repository's write lock; a stale index.lock is reported, not waited on."""
        lock = self.lock_for(repo)
        async with lock:
            problem = repo.index_lock_error()
            if problem is not None:
                raise problem
            yield
