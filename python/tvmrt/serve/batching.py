"""Requests of one model, queued and run in batches.

``run(arrays) -> (outputs, served_by)`` runs the model. ``workers`` coroutines (one per replica
that can run at once) each take the oldest request and,
for a model that batches (``max_rows`` > 0: every input and output has its batch on axis 0, as a
bucket manifest over batch sizes does), the requests behind it while their rows fit in
``max_rows``, waiting up to ``max_delay_s`` for more. The batch's inputs are concatenated along
axis 0 and run once (the bucketed executor picks the smallest bucket that holds them and pads);
each request gets its own rows of the outputs. A request whose rows alone exceed ``max_rows``
runs alone. With ``max_delay_s`` 0 nothing waits: a batch is what queued while the previous one
ran.
"""

from __future__ import annotations

import asyncio
import collections
import time
from typing import Awaitable, Callable, Dict, List, Tuple

import numpy as np

Arrays = Dict[str, np.ndarray]


class Pending:
    __slots__ = ("arrays", "rows", "future")

    def __init__(self, arrays: Arrays, rows: int, future: asyncio.Future) -> None:
        self.arrays = arrays
        self.rows = rows
        self.future = future


class Batcher:
    def __init__(self, run: Callable[[Arrays], Awaitable[Tuple[Arrays, str]]], max_rows: int, workers: int,
                 max_delay_s: float, on_batch: Callable[[int], None] = lambda n: None) -> None:
        self.run = run
        self.max_rows = max_rows
        self.workers = max(1, workers)
        self.max_delay_s = max_delay_s
        self.on_batch = on_batch
        self.pending: collections.deque = collections.deque()
        self.wake = None  # an asyncio.Event, made on the serving loop
        self.tasks: List[asyncio.Task] = []

    def submit(self, arrays: Arrays) -> asyncio.Future:
        """A future of the outputs for one request's inputs (its own rows when it ran in a
        batch) and who computed them (``run``'s second result); cancel it to give up."""
        if not self.tasks:
            self.wake = asyncio.Event()
            self.tasks = [asyncio.ensure_future(self._worker()) for _ in range(self.workers)]
        rows = rows_of(arrays) if self.max_rows else 0
        fut = asyncio.get_running_loop().create_future()
        self.pending.append(Pending(arrays, rows, fut))
        self.wake.set()
        return fut

    async def _worker(self) -> None:
        while True:
            batch = await self._take()
            if batch:
                await self._run(batch)

    async def _take(self) -> List[Pending]:
        while not self.pending:
            self.wake.clear()
            await self.wake.wait()
        batch = [self.pending.popleft()]
        if batch[0].future.done():  # its caller gave up (timeout) while it waited
            return []
        if not 0 < batch[0].rows < self.max_rows:
            return batch
        rows = batch[0].rows
        deadline = time.monotonic() + self.max_delay_s
        while rows < self.max_rows:
            if self.pending:
                nxt = self.pending[0]
                if nxt.future.done():
                    self.pending.popleft()
                    continue
                if not 0 < nxt.rows <= self.max_rows - rows:
                    break
                batch.append(self.pending.popleft())
                rows += nxt.rows
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), left)
            except asyncio.TimeoutError:
                break
        return batch

    async def _run(self, batch: List[Pending]) -> None:
        self.on_batch(len(batch))
        try:
            if len(batch) == 1:
                outputs, by = await self.run(batch[0].arrays)
                parts = [outputs]
            else:
                joined = {name: np.concatenate([p.arrays[name] for p in batch]) for name in batch[0].arrays}
                outputs, by = await self.run(joined)
                parts = split(outputs, [p.rows for p in batch])
        except (Exception, asyncio.CancelledError) as e:
            # Every request of the batch gets the error; the worker lives on unless it was the
            # one cancelled (a run cancelled under it is an error of that run).
            if isinstance(e, asyncio.CancelledError):
                if asyncio.current_task().cancelling():
                    fail(batch, RuntimeError("the server is stopping"))
                    raise
                e = RuntimeError("the model's run was cancelled")
            fail(batch, e)
            return
        for p, out in zip(batch, parts):
            if not p.future.done():
                p.future.set_result((out, by))


def fail(batch: List[Pending], e: BaseException) -> None:
    for p in batch:
        if not p.future.done():
            p.future.set_exception(e)


def rows_of(arrays: Arrays) -> int:
    """A request's batch: the extent of axis 0 of its inputs (the same for each, or 0: it runs
    alone)."""
    extents = {a.shape[0] if a.ndim else 0 for a in arrays.values()}
    return extents.pop() if len(extents) == 1 else 0


def split(outputs: Arrays, rows: List[int]) -> List[Arrays]:
    """Each request's rows of a batch's outputs."""
    for name, arr in outputs.items():
        if arr.ndim == 0 or arr.shape[0] != sum(rows):
            raise RuntimeError(f"output {name!r} of shape {list(arr.shape)} does not have the batch's {sum(rows)} rows on axis 0")
    cuts = np.cumsum(rows)[:-1]
    per_output = {name: np.split(arr, cuts) for name, arr in outputs.items()}
    return [{name: parts[i] for name, parts in per_output.items()} for i in range(len(rows))]
