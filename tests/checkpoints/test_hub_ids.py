"""Checkpoints by hub id (`keras_bert.checkpoints.hub_ids`), through the real client libraries
against small servers on 127.0.0.1 (`tests/support/hub_servers.py`) that serve the installed
all-MiniLM-L6-v2 files: `huggingface_hub` downloads them from `HF_ENDPOINT` and reads its
cache under `HF_HUB_OFFLINE=1` with the server stopped; `kagglehub` downloads them through
its endpoint (`KAGGLE_API_ENVIRONMENT`, reached via `HTTP_PROXY`) and reads its cache offline.

`huggingface_hub` reads its environment once, when it is imported, so its runs are
subprocesses started with that environment (as a user's process would be); the ones that
check only messages load `hub_ids.py` alone, without TensorFlow, to stay fast. `kagglehub`
reads its environment on each call: its tests run in this process.
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from keras_bert.checkpoints import hub_ids
from keras_bert.checkpoints.hub_ids import HubIdError, files_to_fetch, local_checkpoint
from tests.support.hub_servers import HubServer, KaggleServer, folder_files
from tests.support.reference import minilm_dir, require

REPO = "sentence-transformers/all-MiniLM-L6-v2"
HF_ID = f"hf://{REPO}"
KAGGLE_HANDLE = "sentence-transformers/all-minilm-l6-v2/transformers/default"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The files the MiniLM repository holds that no layout reads here: they must never be fetched.
UNREAD = ("pytorch_model.bin", "tf_model.h5", "onnx/model.onnx", "rust_model.ot")
FETCHED = {"config.json", "vocab.txt", "tokenizer_config.json", "tokenizer.json",
           "special_tokens_map.json", "model.safetensors"}


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> dict[str, str]:
    """The installed all-MiniLM-L6-v2 files as a repository, with other frameworks' weights
    beside them as a Hub repository has them (bytes no reader accepts)."""
    require("huggingface_hub")
    files = folder_files(minilm_dir())
    junk = tmp_path_factory.mktemp("unread") / "junk"
    junk.write_bytes(b"not weights" * 100)
    files.update({name: str(junk) for name in UNREAD})
    return files


def _hf_env(tmp_path, endpoint: str, offline: bool = False) -> dict:
    env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"),
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1",
               TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    env.pop("HF_HUB_CACHE", None)
    env.pop("HF_TOKEN", None)
    # The local endpoint is reached directly even where a proxy is configured for the
    # package registries.
    env["NO_PROXY"] = env["no_proxy"] = ",".join(
        filter(None, ["127.0.0.1,localhost", os.environ.get("NO_PROXY", "")]))
    env["HF_HUB_OFFLINE"] = "1" if offline else "0"
    return env


# Loads hub_ids.py alone (no TensorFlow: the package's __init__ is not run) and prints, for
# each id in argv, the directory it resolves to or its error's type and message.
_RESOLVE = textwrap.dedent("""
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("hub_ids", sys.argv[1])
    hub_ids = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hub_ids)
    for source in sys.argv[2:]:
        try:
            print("OK", hub_ids.local_checkpoint(source))
        except hub_ids.HubIdError as e:
            print(type(e).__name__, e)
""")


def _resolve(env: dict, *sources: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", _RESOLVE, hub_ids.__file__, *sources],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert len(lines) == len(sources), result.stdout  # one line each, no traceback
    return lines


# ----- which files -------------------------------------------------------------------------


def test_only_the_files_a_layout_reads():
    hf = ["README.md", ".gitattributes", "config.json", "vocab.txt", "tokenizer.json",
          "tokenizer_config.json", "model.safetensors", "pytorch_model.bin", "tf_model.h5",
          "onnx/model.onnx", "onnx/config.json", "1_Pooling/config.json", "modules.json"]
    assert files_to_fetch(hf) == ["config.json", "tokenizer_config.json", "tokenizer.json",
                                  "vocab.txt", "model.safetensors"]
    assert files_to_fetch([f for f in hf if f != "model.safetensors"])[-1] == "pytorch_model.bin"
    sharded = ["config.json", "vocab.txt", "model.safetensors.index.json",
               "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
               "pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json"]
    assert files_to_fetch(sharded) == ["config.json", "vocab.txt", "model.safetensors.index.json",
                                       "model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors"]
    preset = ["config.json", "metadata.json", "tokenizer.json", "model.weights.h5",
              "assets/tokenizer/vocabulary.txt", "README.md"]
    assert files_to_fetch(preset) == ["config.json", "metadata.json", "tokenizer.json",
                                      "assets/tokenizer/vocabulary.txt", "model.weights.h5"]
    google = ["bert_config.json", "vocab.txt", "bert_model.ckpt.index",
              "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.meta", "README.md"]
    assert files_to_fetch(google) == ["bert_config.json", "vocab.txt", "bert_model.ckpt.data-"
                                      "00000-of-00001", "bert_model.ckpt.index",
                                      "bert_model.ckpt.meta"]
    # A layout not known here (a SavedModel, say) comes whole; its format reads what it needs.
    assert files_to_fetch(["saved_model.pb", "variables/variables.index"]) == [
        "saved_model.pb", "variables/variables.index"]


# ----- failures: one line each, naming the fix ---------------------------------------------


@pytest.mark.parametrize("module, source", [("huggingface_hub", HF_ID),
                                            ("kagglehub", f"kaggle://{KAGGLE_HANDLE}")])
def test_a_missing_client_library_says_what_to_install(monkeypatch, module, source):
    monkeypatch.setitem(sys.modules, module, None)  # what `import` meets when it is absent
    with pytest.raises(HubIdError) as error:
        local_checkpoint(source)
    assert str(error.value) == (f"{source} needs the {module} package: "
                                "pip install 'keras-bert-tf[hub]'")
    assert error.value.__suppress_context__


@pytest.mark.parametrize("source, says", [
    ("hf://just-a-name", "a Hugging Face id is hf://ORG/NAME or hf://ORG/NAME@REVISION"),
    ("hf://org/name@", "a Hugging Face id is"),
    ("kaggle://owner/model", "a Kaggle id is kaggle://OWNER/MODEL/FRAMEWORK/VARIATION"),
])
def test_a_malformed_id_says_the_form(source, says):
    with pytest.raises(HubIdError, match=says):
        local_checkpoint(source)


def test_a_preset_name_is_not_pretrained_weights(tmp_path, monkeypatch):
    """`tiny` named random weights silently; now the name must say so (`random-tiny`)."""
    from keras_bert import TextClassifier
    from keras_bert.config import PRESETS
    from keras_bert.tasks.sources import RandomEncoder, open_source

    for source in ("tiny", "base"):
        with pytest.raises(HubIdError, match=f"write 'random-{source}' for a randomly "
                                             f"initialised BERT-{source}"):
            TextClassifier.from_pretrained(source, labels=2)
    with pytest.raises(ValueError,
                       match=r"random weights come in the preset sizes \['random-tiny'"):
        open_source("random-huge")
    random = open_source("random-tiny").encoder
    assert isinstance(random, RandomEncoder)
    assert random.load_encoder().config.hidden_size == PRESETS["tiny"].hidden_size
    (tmp_path / "tiny").mkdir()  # a directory of that name is still read as a directory
    monkeypatch.chdir(tmp_path)
    assert local_checkpoint("tiny") == "tiny"


def test_huggingface_failures_name_their_fix(repository, tmp_path):
    with HubServer(REPO, repository) as server:
        online = _resolve(_hf_env(tmp_path, server.url), "hf://nobody/nothing",
                          f"{HF_ID}@v9")
    assert online == [
        f"HubIdError hf://nobody/nothing: no such repository on {server.url} (check the id; "
        "a private one needs HF_TOKEN)",
        f"HubIdError {HF_ID}@v9: no such revision (a branch, tag or commit of the repository)"]
    cache = tmp_path / "hf" / "hub"
    offline, unreachable = (_resolve(_hf_env(tmp_path, server.url, offline), HF_ID)[0]
                            for offline in (True, False))
    assert offline == (f"HubIdError {HF_ID} is not in the Hugging Face cache ({cache}) and "
                       "HF_HUB_OFFLINE is set: fetch it once online (unset HF_HUB_OFFLINE) or "
                       "point HF_HUB_CACHE at a cache that holds it")
    assert unreachable == (f"HubIdError {HF_ID}: {server.url} cannot be reached and the Hugging "
                           f"Face cache ({cache}) does not hold it: check the connection or "
                           "HF_ENDPOINT")


def test_sharded_safetensors_by_hub_id_read_through_the_caches_links(tmp_path):
    """`huggingface_hub`'s cache keeps a snapshot's files as links into the repository's
    `blobs/`; the shards of a sharded checkpoint are read through them (and only they and
    the index are fetched)."""
    from safetensors.numpy import save_file

    from keras_bert.checkpoints.huggingface import read_weights

    require("huggingface_hub")
    repo = tmp_path / "repo"
    repo.mkdir()
    shards = {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}
    save_file({"a": np.arange(3, dtype=np.float32)}, str(repo / shards["a"]))
    save_file({"b": np.ones((2, 2), np.float32)}, str(repo / shards["b"]))
    (repo / "model.safetensors.index.json").write_text(json.dumps({"weight_map": shards}))
    (repo / "config.json").write_text("{}")
    (repo / "pytorch_model.bin").write_bytes(b"unread")
    with HubServer("org/sharded", folder_files(str(repo))) as server:
        (line,) = _resolve(_hf_env(tmp_path, server.url), "hf://org/sharded")
    assert server.downloads() == {"config.json", "model.safetensors.index.json", *shards.values()}
    path = line.removeprefix("OK ")
    assert os.path.islink(os.path.join(path, shards["a"]))  # the cache's link into blobs/
    state = read_weights(path)
    np.testing.assert_array_equal(state["a"], np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(state["b"], np.ones((2, 2), np.float32))


# 33 s on a busy 2-core Zen 3: the command line in a subprocess; the error's text is checked in
# this process by the other tests here
@pytest.mark.slow
def test_the_command_line_prints_one_line(repository, tmp_path):
    """`keras-bert convert` with an id the Hub does not know: one line, exit status 2."""
    with HubServer(REPO, repository) as server:
        result = subprocess.run(
            [sys.executable, "-m", "keras_bert.cli", "convert", "hf://nobody/nothing",
             str(tmp_path / "out")], env=_hf_env(tmp_path, server.url), capture_output=True,
            text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"keras-bert convert: error: hf://nobody/nothing: no such repository on {server.url} "
        "(check the id; a private one needs HF_TOKEN)"]


@pytest.mark.slow  # 17-30 s: kept out of the README's tier (under 15 min); CI runs it once a cycle
def test_a_model_directory_by_hub_id_serves_every_command(model_dir, tmp_path):
    """A keras_bert model directory kept on the Hub (as a user shares a fine-tuned one):
    `keras-bert encode hf://...` fetches it whole through `huggingface_hub` and answers as
    the local directory does, to the last bit."""
    require("huggingface_hub")
    text = "the whale\nthe sea and the ship\n"

    def encode(source, env):
        result = subprocess.run([sys.executable, "-m", "keras_bert.cli", "encode", source,
                                 "--seq-length", "16"], input=text, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    with HubServer("me/tiny-bert", folder_files(model_dir)) as server:
        env = _hf_env(tmp_path, server.url)
        by_id = encode("hf://me/tiny-bert", env)
        assert server.downloads() == set(folder_files(model_dir))
    assert by_id == encode(model_dir, env) and len(by_id.splitlines()) == 2


# ----- Kaggle --------------------------------------------------------------------------------


@pytest.fixture
def kaggle_env(monkeypatch, tmp_path):
    """kagglehub's environment: its cache under tmp_path, Kaggle's local endpoint
    (http://localhost; `TEST` would print every response body) reached through `HTTP_PROXY`
    (set by the test), no credentials."""
    require("kagglehub")
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCALHOST")
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kaggle token either
    for name in ("NO_PROXY", "no_proxy", "KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY",
                 "KAGGLE_KERNEL_RUN_TYPE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_kaggle_downloads_once_then_reads_its_cache(kaggle_env, repository):
    from keras_bert.checkpoints.conversion import checkpoint_vocab
    from keras_bert.jobs.finetune import FinetuneJob
    from keras_bert.jobs.options import with_fetched_checkpoint
    from keras_bert.jobs.pretrain import PretrainJob

    source = f"kaggle://{KAGGLE_HANDLE}"
    files = {k: v for k, v in repository.items() if k not in UNREAD}
    with KaggleServer(KAGGLE_HANDLE, files, version=3) as server:
        kaggle_env.setenv("HTTP_PROXY", server.url)
        path = local_checkpoint(source)  # the latest version: asked of the server
        assert server.downloads() == set(files)
        with pytest.raises(HubIdError, match=r"kaggle://nobody/x/transformers/y: no such model "
                                             r"on Kaggle \(check the owner"):
            local_checkpoint("kaggle://nobody/x/transformers/y")
    assert path.endswith(os.path.join(KAGGLE_HANDLE, "3"))
    with pytest.raises(HubIdError, match=(
            f"{source}: Kaggle cannot be reached and kagglehub's cache .* does not hold it: "
            r"check the connection \(offline, kagglehub reads an id from its cache only with "
            r"its VERSION\)")):
        local_checkpoint(source)  # the server is gone: the latest version cannot be asked
    assert local_checkpoint(f"{source}/3") == path  # from the cache, no server
    for name, original in files.items():  # the very bytes served
        assert filecmp.cmp(os.path.join(path, name), original, shallow=False), name
    assert checkpoint_vocab(f"{source}/3") == (os.path.join(path, "vocab.txt"), True)
    # The jobs (`finetune --model`, `pretrain --init`) fetch once and keep the fetched path.
    finetune = FinetuneJob(task="classify", model=f"{source}/3", train="t.csv", out="o")
    pretrain = PretrainJob(out="o", init=f"{source}/3")
    for job, field in ((finetune, "model"), (pretrain, "init")):
        fetched = with_fetched_checkpoint(job, field)
        assert getattr(fetched, field) == path
        assert fetched.precision_note == job.precision_note  # what `auto` resolved to


# ----- the MiniLM by hf:// id: from_pretrained, fit, export; online once, then offline -------

_FINETUNE = textwrap.dedent("""
    import sys
    import numpy as np
    import keras_bert

    source, out, train = sys.argv[1], sys.argv[2], sys.argv[3] == "train"
    clf = keras_bert.TextClassifier.from_pretrained(source, labels=["sea", "land"],
                                                    seq_length=32, precision="float32")
    texts = ["Call me Ishmael.", "The whale sounded.", "A damp, drizzly November.",
             "Queequeg was a native of Rokovoko."]
    features = clf.preprocessor(np.array(texts, dtype=object))
    np.save(out + "/pooled.npy", clf.network.encoder(features)["pooled_output"].numpy())
    if train:
        clf.fit(texts, ["sea", "sea", "land", "land"], epochs=1, batch_size=2, seed=1,
                verbose=0)
        print("exported", clf.export(out + "/served"))
""")


@pytest.mark.slow
def test_minilm_by_hub_id_online_once_then_offline(repository, tmp_path):
    """The first `from_pretrained("hf://...")` downloads through huggingface_hub from the
    local endpoint (only the files the layout reads); the second, offline with the server
    stopped, reads its cache, fine-tunes and exports. Both pool exactly as the local path."""
    from keras_bert import TextClassifier
    from keras_bert.export.session_bundle import SessionBundle

    def run(env, out, train):
        os.makedirs(out)
        result = subprocess.run([sys.executable, "-c", _FINETUNE, HF_ID, out, train],
                                env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        return np.load(os.path.join(out, "pooled.npy")), result.stdout

    with HubServer(REPO, repository) as server:
        online, _ = run(_hf_env(tmp_path, server.url), str(tmp_path / "online"), "no")
    assert server.downloads() == FETCHED  # never pytorch_model.bin, ONNX, TF or Rust weights
    offline, printed = run(_hf_env(tmp_path, server.url, offline=True),
                           str(tmp_path / "offline"), "train")

    local = TextClassifier.from_pretrained(minilm_dir(), labels=["sea", "land"], seq_length=32,
                                           precision="float32")
    texts = np.array(["Call me Ishmael.", "The whale sounded.", "A damp, drizzly November.",
                      "Queequeg was a native of Rokovoko."], dtype=object)
    want = local.network.encoder(local.preprocessor(texts))["pooled_output"].numpy()
    np.testing.assert_array_equal(online, want)
    np.testing.assert_array_equal(offline, want)
    served = printed.split("exported ", 1)[1].strip()
    with SessionBundle(served) as bundle:  # TF Serving's Session path
        got = bundle.run("serving_default", {"text": np.array(["Call me Ishmael."], dtype=object)})
    assert got["label"][0].decode() in ("sea", "land")
