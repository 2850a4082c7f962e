"""`Batcher`: merges concurrent requests to one signature into one call, like TF Serving's
`--enable_batching` (used by `keras_bert.devserver.model_store` when batching is on)."""

from __future__ import annotations

import queue
import threading
import time

import numpy as np


class _Pending:
    """One request waiting in a `Batcher`."""

    def __init__(self, inputs: dict[str, np.ndarray]):
        self.inputs = inputs
        self.size = next(iter(inputs.values())).shape[0]
        self.key = tuple(sorted((k, v.shape[1:]) for k, v in inputs.items()))
        self.done = threading.Event()
        self.outputs: dict[str, np.ndarray] | None = None
        self.error: BaseException | None = None


class Batcher:
    """Merges concurrent requests to one signature into one call (TF Serving's
    `--enable_batching`).

    `threads` workers each take the oldest request, add whatever else is queued (waiting up
    to `timeout_s` for more, default 0: no added latency) up to `max_batch_size` elements,
    concatenate requests whose non-batch dims agree, run them once and split the outputs.
    A merged call that fails is retried request by request, so one bad request fails alone.
    """

    def __init__(self, call, max_batch_size: int = 32, timeout_s: float = 0.0,
                 threads: int = 1):
        self.call = call
        self.max_batch_size = max_batch_size
        self.timeout_s = timeout_s
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stopped = False
        self._threads = [threading.Thread(target=self._loop, name="batcher", daemon=True)
                         for _ in range(threads)]
        for thread in self._threads:
            thread.start()

    def __call__(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The outputs of `inputs` (rank >= 1, same batch size), run in some batch."""
        item = _Pending(inputs)
        with self._lock:
            if self._stopped or item.size >= self.max_batch_size:
                item = None
            else:
                self.queue.put(item)
        if item is None:
            return self.call(inputs)
        item.done.wait()
        if item.error is not None:
            raise item.error
        return item.outputs

    def _loop(self) -> None:
        carry = None  # a request that did not fit in the previous batch
        while True:
            first, carry = carry or self.queue.get(), None
            if first is None:
                return
            batch, size = [first], first.size
            deadline = time.monotonic() + self.timeout_s
            while size < self.max_batch_size:
                try:
                    item = self.queue.get(timeout=max(0.0, deadline - time.monotonic())) \
                        if self.timeout_s else self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self.queue.put(None)  # keep the stop signal for this loop's next turn
                    break
                if size + item.size > self.max_batch_size:
                    carry = item
                    break
                batch.append(item)
                size += item.size
            groups: dict[tuple, list[_Pending]] = {}
            for item in batch:
                groups.setdefault(item.key, []).append(item)
            for group in groups.values():
                self._run(group)

    def _run(self, group: list[_Pending]) -> None:
        try:
            if len(group) > 1:
                try:
                    self._run_merged(group)
                    return
                except Exception:  # noqa: BLE001 - retried one by one below
                    pass
            for item in group:
                try:
                    item.outputs = self.call(item.inputs)
                except BaseException as e:  # noqa: BLE001 - handed to the waiting request
                    item.error = e
        finally:
            for item in group:
                item.done.set()

    def _run_merged(self, group: list[_Pending]) -> None:
        merged = {name: np.concatenate([item.inputs[name] for item in group])
                  for name in group[0].inputs}
        outputs = self.call(merged)
        total = sum(item.size for item in group)
        if any(value.ndim == 0 or value.shape[0] != total for value in outputs.values()):
            raise ValueError("outputs are not batch-major")
        offsets = np.cumsum([item.size for item in group])[:-1]
        split = {name: np.split(value, offsets) for name, value in outputs.items()}
        for i, item in enumerate(group):
            item.outputs = {name: parts[i] for name, parts in split.items()}

    def stop(self) -> None:
        """Finishes what is queued, then stops the workers (later calls run unbatched)."""
        with self._lock:
            self._stopped = True
            for _ in self._threads:
                self.queue.put(None)
