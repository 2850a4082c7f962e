"""The contenders of `bench/serving_latency.py`, each built in a process of its own
(`worker`): our export in TF Serving's loader (`session*`), behind `keras-bert serve`
(`server`), and the peers (`tokenizers` + ONNX Runtime, Hugging Face's PyTorch model). A
worker times the driver's blocks of requests, sent one at a time or by `--clients` threads
at once, as a server's concurrent clients send them."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

from bench.support import common
from bench.support.serving_report import OURS

EXPORTS = {"session": "export", "session_intra1": "export",  # contender -> its export
           "session_xla": "export_xla", "session_xla_onednn": "export_xla",
           "session_bf16": "export_bf16", "session_int8": "export_int8",
           "session_int8_onednn": "export_int8_onednn"}
# Contenders whose Session splits each op over fewer threads than `--threads` (its
# intra-op pool; TF Serving's `--tensorflow_intra_op_parallelism`).
INTRA_OP = {"session_intra1": 1}
# `keras-bert serve` contenders -> the flags they add: one intra-op thread with concurrent
# requests run side by side (merging off), and with them merged into calls on its one batch
# thread (its defaults), which leaves one core to do the work.
SERVER_OPTIONS = {"server": (), "server_intra1": ("--intra-op-threads", "1", "--no-batching"),
                  "server_intra1_merged": ("--intra-op-threads", "1")}
XLA_ONEDNN_FLAGS = "--xla_cpu_use_onednn=true"
SERVERS: list = []  # `keras-bert serve` processes of this worker, stopped with it


def hf_tokenizer(vocab: str):
    from tokenizers import BertWordPieceTokenizer

    tokenizer = BertWordPieceTokenizer(vocab, lowercase=True)._tokenizer
    tokenizer.enable_padding(pad_id=0)
    tokenizer.enable_truncation(512)
    return tokenizer


def session_contender(name: str, setup: dict, threads: int):
    """Our export in TF Serving's loader, its Session's pools as `keras-bert serve` and TF
    Serving set them (`session_config`): `threads` each, or `INTRA_OP`'s intra-op pool."""
    import numpy as np

    from keras_bert.export.session_bundle import SessionBundle, session_config

    config = session_config(INTRA_OP.get(name, threads), threads)
    bundle = SessionBundle(setup[EXPORTS[name]], config=config)
    return lambda texts: bundle.run("serving_default", {"text": np.array(texts, dtype=object)},
                                    ["pooled_output"])["pooled_output"]


def make_contender(name: str, setup: dict, threads: int):
    """A function texts -> pooled outputs `[batch, hidden]` (numpy) for contender `name`."""
    import numpy as np

    if name == "session_xla_onednn":  # read once, when XLA starts: before TF is imported
        os.environ["XLA_FLAGS"] = " ".join(filter(None, [os.environ.get("XLA_FLAGS"),
                                                         XLA_ONEDNN_FLAGS]))
    if name in OURS + tuple(SERVER_OPTIONS):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    if name in OURS:
        return session_contender(name, setup, threads)
    if name in SERVER_OPTIONS:
        from keras_bert.client import GrpcClient

        server, address = common.start_server(os.path.dirname(setup["export"]),
                                              options=SERVER_OPTIONS[name])
        SERVERS.append(server)
        client = GrpcClient(address, "bench", timeout=600)
        return lambda texts: client.predict_columns(
            {"text": texts}, output_filter=["pooled_output"])["pooled_output"]
    tokenizer = hf_tokenizer(setup["vocab"])

    def encode(texts):
        encodings = tokenizer.encode_batch_fast(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask, np.zeros_like(ids)

    if name == "torch":
        import torch
        import transformers

        torch.set_num_threads(threads)
        model = transformers.BertModel.from_pretrained(setup["hf_dir"]).eval()

        def run_torch(texts):
            ids, mask, types = (torch.from_numpy(a) for a in encode(texts))
            with torch.inference_mode():
                return model(input_ids=ids, attention_mask=mask,
                             token_type_ids=types).pooler_output.numpy()

        return run_torch
    session = common.ort_session(setup["onnx_int8" if name == "ort_int8" else "onnx"], threads)

    def run_ort(texts):
        ids, mask, types = encode(texts)
        return session.run(["pooler_output"], {"input_ids": ids, "attention_mask": mask,
                                               "token_type_ids": types})[0]

    return run_ort


def worker(name: str, setup: dict, threads: int, connection, clients: int = 1) -> None:
    """Serves the driver's requests for one contender, in its own process: each block from
    `clients` threads at once."""
    run = make_contender(name, setup, threads)
    connection.send("ready")
    while True:
        command, payload = connection.recv()
        if command == "stop":
            for server in SERVERS:
                server.terminate()
                server.wait(timeout=60)
            return
        if command == "outputs":
            connection.send(run(payload))
            continue
        connection.send(timed_block(run, payload, clients))


def timed_block(run, requests: list, clients: int) -> tuple[list[float], float]:
    """(each request's seconds, the block's wall seconds): `requests` sent one after another,
    or by `clients` threads at once, each sending its next as soon as one is answered."""
    def timed(texts) -> float:
        start = time.perf_counter()
        run(texts)
        return time.perf_counter() - start

    start = time.perf_counter()
    if clients == 1:  # on the calling thread, as every run before `--clients` was timed
        seconds = [timed(texts) for texts in requests]
    else:
        with ThreadPoolExecutor(clients) as pool:
            seconds = list(pool.map(timed, requests))
    return seconds, time.perf_counter() - start
