"""One replica per core group: a node's CPUs split into G groups, each replica process pinned to
one of them (``--replica-core-groups G``).

A replica claims the first free group of its node by locking that group's file (``flock``, held
while the process lives: a replica that dies frees its group, and the one Ray starts in its place
claims it), then pins every thread of its process to the group's CPUs, so the threads the runtime
starts later (its kernel workers, sized from the CPUs the process may use) stay there too.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
from typing import List, Optional, Sequence


def split(cpus: Sequence[int], groups: int) -> List[List[int]]:
    """``cpus`` in ``groups`` contiguous groups, as even as they divide (the first groups get
    the extra CPUs)."""
    cpus = sorted(cpus)
    if not 0 < groups <= len(cpus):
        raise ValueError(f"{groups} core groups of {len(cpus)} CPUs: each group needs a CPU")
    size, extra = divmod(len(cpus), groups)
    out, at = [], 0
    for g in range(groups):
        n = size + (g < extra)
        out.append(cpus[at:at + n])
        at += n
    return out


class CoreGroup:
    """A group of this node's CPUs claimed by this process (until it exits or :meth:`release`)."""

    def __init__(self, index: int, cpus: List[int], lock) -> None:
        self.index, self.cpus, self._lock = index, cpus, lock

    @classmethod
    def claim(cls, key: str, groups: int, cpus: Optional[Sequence[int]] = None,
              lock_dir: Optional[str] = None) -> "CoreGroup":
        """The first group not claimed by another process with the same ``key`` (one per
        deployment and node); ``cpus``: the CPUs to split (default: those this process may use)."""
        cpus = sorted(os.sched_getaffinity(0)) if cpus is None else list(cpus)
        lock_dir = lock_dir or os.path.join(tempfile.gettempdir(), "tvmrt-core-groups")
        os.makedirs(lock_dir, exist_ok=True)
        safe_key = re.sub(r"[^A-Za-z0-9_.-]", "_", key)
        for index, group in enumerate(split(cpus, groups)):
            lock = open(os.path.join(lock_dir, f"{safe_key}.{index}.lock"), "a")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                continue
            return cls(index, group, lock)
        raise RuntimeError(f"all {groups} core groups of this node are taken ({key}): "
                           "more replicas on the node than --replica-core-groups")

    def pin(self) -> None:
        """Pin every thread of this process to the group's CPUs (threads started later inherit it)."""
        for tid in os.listdir("/proc/self/task"):
            try:
                os.sched_setaffinity(int(tid), self.cpus)
            except ProcessLookupError:  # the thread ended meanwhile
                pass

    def release(self) -> None:
        self._lock.close()

    def __str__(self) -> str:
        return f"core group {self.index} (CPUs {','.join(map(str, self.cpus))})"
