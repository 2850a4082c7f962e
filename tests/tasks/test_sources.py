"""`from_pretrained` reads every source in memory (`keras_bert/tasks/sources.py`).

A Hugging Face folder, the same folder by `hf://` id (served by the local test hub,
`tests/support/hub_servers.py`), a Google checkpoint and `random-tiny` are each loaded five
times in a fresh interpreter whose temporary directory is a new, empty folder: afterwards it
holds nothing new (each load of a foreign checkpoint used to leave a converted copy there),
each load built one `BertEncoder` (counted through its `__init__`; they were two), resolved
its source once (`hub_ids.local_checkpoint`) and read its config file once, and the pooled
outputs equal those of the explicit path this one replaced: the source converted into
a model directory (`keras_bert.checkpoints.convert`) and that directory loaded. The
reference for `random-tiny` is the preset's encoder built after the same seed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_bert import BertConfig, BertEncoder, TextEmbedder
from keras_bert.checkpoints import convert
from keras_bert.checkpoints.google import save_google_dir
from keras_bert.checkpoints.huggingface import save_hf_dir
from keras_bert.tasks.sources import RANDOM_VOCAB
from keras_bert.text.preprocessor import BertPreprocessor
from keras_bert.text.tokenizer import BertTokenizer, load_vocab
from tests.support.hub_servers import HubServer, folder_files
from tests.support.reference import require
from tests.support.tiny_data import SPECIAL, WORDS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPO_ID = "org/tiny-bert"
TEXTS = ["the ship sailed over a calm sea", "ahab and ishmael",
         "what is the capital of france ?", "paris london rome whale"]
LOADS, SEQ_LENGTH, SEED = 5, 16, 11

# Loads each source of argv[2] (a JSON dict name -> source) LOADS times; writes the pooled
# outputs (one array per load) to argv[1] and prints what it saw as JSON.
_LOAD = textwrap.dedent("""
    import builtins, collections, json, os, sys, tempfile
    import keras, numpy as np
    from keras_bert import TextEmbedder
    from keras_bert.checkpoints import hub_ids
    from keras_bert.models.encoder import BertEncoder

    out, sources, loads, seq_length, seed, texts = (sys.argv[1], json.loads(sys.argv[2]),
                                                    *map(int, sys.argv[3:6]), sys.argv[6:])
    calls = collections.Counter()  # encoders built, sources resolved, config files read

    def counting(name, function):
        def counted(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return counted

    init = BertEncoder.__init__

    def counted_init(self, *args, **kwargs):  # Keras reads `self` from the signature
        calls["built"] += 1
        init(self, *args, **kwargs)

    BertEncoder.__init__ = counted_init
    hub_ids.local_checkpoint = counting("resolved", hub_ids.local_checkpoint)
    real_open = builtins.open

    def tracked_open(file, mode="r", *args, **kwargs):
        if "r" in mode and os.path.basename(str(file)) in ("config.json", "bert_config.json"):
            calls["configs"] += 1
        return real_open(file, mode, *args, **kwargs)

    builtins.open = tracked_open
    tmp = tempfile.gettempdir()

    def files():
        return sorted(os.path.relpath(os.path.join(d, f), tmp)
                      for d, dirs, names in os.walk(tmp) for f in names + dirs)

    before, pooled, builds = files(), {}, {}
    for name, source in sources.items():
        for i in range(loads):
            keras.utils.set_random_seed(seed)
            start = dict(calls)
            model = TextEmbedder.from_pretrained(source, pooling="pooled", seq_length=seq_length,
                                                 precision="float32")
            builds.setdefault(name, []).append(
                [calls[k] - start.get(k, 0) for k in ("built", "resolved", "configs")])
            ids = model.preprocessor(np.array(texts, dtype=object))
            pooled[f"{name}-{i}"] = np.asarray(model.network.encoder(ids)["pooled_output"])
    np.savez(out, **pooled)
    print(json.dumps({"tmp": tmp, "before": before, "after": files(), "builds": builds}))
""")


def _tiny_encoder(seed: int) -> BertEncoder:
    keras.utils.set_random_seed(seed)
    return BertEncoder(BertConfig(vocab_size=len(SPECIAL) + len(WORDS), hidden_size=32,
                                  num_layers=2, num_heads=4, intermediate_size=64,
                                  max_position_embeddings=64, hidden_act="gelu_approximate"))


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, str]:
    """A tiny Hugging Face folder and a tiny Google checkpoint (different random weights)."""
    root = tmp_path_factory.mktemp("sources")
    vocab = root / "vocab.txt"
    vocab.write_text("".join(f"{t}\n" for t in SPECIAL + WORDS), encoding="utf-8")
    hf = save_hf_dir(_tiny_encoder(1), str(root / "hf"), str(vocab), lower_case=True)
    google = save_google_dir(_tiny_encoder(2), str(root / "google"), str(vocab))
    return {"hf_folder": hf, "google": google}


def _pooled(model) -> np.ndarray:
    ids = model.preprocessor(np.array(TEXTS, dtype=object))
    return np.asarray(model.network.encoder(ids)["pooled_output"])


def _references(sources: dict[str, str], tmp_path) -> dict[str, np.ndarray]:
    """The explicit path: each checkpoint converted into a model directory, then loaded;
    `random-tiny`'s encoder built from the preset after the same seed."""
    want = {}
    for name, source in sources.items():
        converted = convert(source, str(tmp_path / f"converted-{name}")).path
        want[name] = _pooled(TextEmbedder.from_pretrained(
            converted, pooling="pooled", seq_length=SEQ_LENGTH, precision="float32"))
    want["hf_id"] = want["hf_folder"]  # the server serves the folder's files
    keras.utils.set_random_seed(SEED)
    encoder = BertEncoder(BertConfig.from_preset("tiny", vocab_size=len(load_vocab(RANDOM_VOCAB))))
    preprocessor = BertPreprocessor(BertTokenizer(RANDOM_VOCAB, lower_case=True), SEQ_LENGTH)
    ids = preprocessor(np.array(TEXTS, dtype=object))
    want["random_tiny"] = np.asarray(encoder(ids)["pooled_output"])
    return want


# 45 s on a busy 2-core Zen 3: every source loaded in a subprocess with its own TMPDIR
@pytest.mark.slow
def test_loads_leave_the_temporary_directory_as_they_found_it(sources, tmp_path):
    require("huggingface_hub")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "pooled.npz"
    with HubServer(REPO_ID, folder_files(sources["hf_folder"])) as server:
        env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3",
                   HF_ENDPOINT=server.url, HF_HOME=str(tmp_path / "hf-home"),
                   HF_HUB_OFFLINE="0", HF_HUB_DISABLE_PROGRESS_BARS="1",
                   HF_HUB_DISABLE_TELEMETRY="1")
        env.pop("HF_HUB_CACHE", None)
        env["NO_PROXY"] = env["no_proxy"] = ",".join(
            filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY", "")]))
        loaded = {**sources, "hf_id": f"hf://{REPO_ID}", "random_tiny": "random-tiny"}
        done = subprocess.run([sys.executable, "-c", _LOAD, str(out), json.dumps(loaded),
                               str(LOADS), str(SEQ_LENGTH), str(SEED), *TEXTS],
                              env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert os.path.realpath(seen["tmp"]) == os.path.realpath(tmp)
    assert seen["after"] == seen["before"], seen["after"]  # 20 loads, nothing left behind
    # Each load builds one encoder, resolves its source once and reads its config once (a
    # random model has neither); they were two encoders, four resolutions, three readings.
    per_load = {name: [1, 0 if name == "random_tiny" else 1, 0 if name == "random_tiny" else 1]
                for name in loaded}
    assert seen["builds"] == {name: [want] * LOADS for name, want in per_load.items()}
    pooled = np.load(out)
    for name, expected in _references(sources, tmp_path).items():
        for i in range(LOADS):
            np.testing.assert_allclose(pooled[f"{name}-{i}"], expected, rtol=0, atol=1e-6,
                                       err_msg=f"{name}, load {i}")
