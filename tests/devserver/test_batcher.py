"""The development server's `Batcher`: concurrent requests merged into batches of at most
`max_batch_size`, a failing request's error given to it alone, and unbatched calls once
stopped."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from keras_bert.devserver.batcher import Batcher


def test_batcher_merges_concurrent_requests_and_isolates_failures():
    calls = []

    def call(inputs):
        calls.append(len(inputs["text"]))
        time.sleep(0.01)
        if b"bad" in inputs["text"]:
            raise ValueError("bad input")
        return {"length": np.array([len(t) for t in inputs["text"]])}

    batcher = Batcher(call, max_batch_size=8)
    texts = [b"x" * i for i in range(1, 24)] + [b"bad"]

    def one(text):
        try:
            return batcher({"text": np.array([text], object)})["length"].tolist()
        except ValueError as e:
            return str(e)

    with ThreadPoolExecutor(12) as executor:
        answers = list(executor.map(one, texts))
    batcher.stop()
    assert answers == [[len(t)] for t in texts[:-1]] + ["bad input"]
    assert max(calls) > 1 and max(calls) <= 8  # merged, within max_batch_size
    assert one(b"after stop") == [10]  # runs unbatched once stopped
