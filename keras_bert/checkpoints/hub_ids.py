"""Checkpoints named by a hub id instead of a local directory, fetched by the hubs' own
client libraries (optional: the `hub` extra), so that their caches, offline switches,
endpoints and tokens work as their users know them:

- `hf://ORG/NAME[@REVISION]` through `huggingface_hub` (`HF_HOME` / `HF_HUB_CACHE`,
  `HF_HUB_OFFLINE`, `HF_ENDPOINT`, `HF_TOKEN`); only the files a layout reads are fetched:
  its configuration, vocabulary and tokenizer settings, and one set of weights (safetensors
  before PyTorch's pickles; never ONNX, TF or other frameworks' copies);
- `kaggle://OWNER/MODEL/FRAMEWORK/VARIATION[/VERSION]` through `kagglehub` (its cache,
  `KAGGLEHUB_CACHE`, its credentials; on Kaggle itself a model attached to the notebook is
  read where it is mounted); a Kaggle variation is one checkpoint and comes whole.

`local_checkpoint(source)` is the one place a source becomes a directory: `convert`, the
`from_pretrained` of every model class and the command line's checkpoint options call it. Each
failure (a library missing, an unknown id, offline without a cached copy) is a `HubIdError`:
one line naming its fix.
"""

from __future__ import annotations

import os
import posixpath
import re

HF_SCHEME, KAGGLE_SCHEME = "hf://", "kaggle://"
INSTALL = "pip install 'keras-bert-tf[hub]'"

# The small files any supported layout reads: Hugging Face's and Google's configs, a keras-hub
# preset's config, metadata and tokenizer, the vocabularies and tokenizer settings.
SMALL_FILES = ("config.json", "bert_config.json", "metadata.json", "tokenizer_config.json",
               "tokenizer.json", "special_tokens_map.json", "vocab.txt",
               "assets/tokenizer/vocabulary.txt")
# Hugging Face's weight files, preferred first (`huggingface.WEIGHT_FILES` reads them in
# this order too); a keras-hub preset's and Google's release are recognised by their own.
_HF_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
               "pytorch_model.bin.index.json")
_HF_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_KAGGLE_ID = re.compile(r"^[\w.-]+/[\w.-]+/[\w.-]+/[\w.-]+(/\d+)?$")


class HubIdError(ValueError):
    """A hub id that cannot be fetched; the message is one line that names the fix."""


def is_hub_id(source) -> bool:
    """Whether `source` names a checkpoint on a hub (`hf://...`, `kaggle://...`)."""
    return isinstance(source, str) and source.startswith((HF_SCHEME, KAGGLE_SCHEME))


def local_checkpoint(source) -> str:
    """The local directory of checkpoint `source`: a path as it is; a hub id fetched into
    (or found in) its library's cache. A preset size such as `tiny` is refused: it names no
    weights (`random-tiny` is the random model of that size where one is accepted)."""
    source = os.fspath(source)
    if source.startswith(HF_SCHEME):
        return _huggingface(source)
    if source.startswith(KAGGLE_SCHEME):
        return _kaggle(source)
    if not os.path.exists(source):
        from keras_bert.config import PRESETS

        if source in PRESETS:
            raise HubIdError(
                f"{source!r} is a model size, not pretrained weights: write 'random-{source}' "
                f"for a randomly initialised BERT-{source} (from_pretrained, finetune "
                f"--model), or give a checkpoint directory, {HF_SCHEME}ORG/NAME or "
                f"{KAGGLE_SCHEME}OWNER/MODEL/FRAMEWORK/VARIATION")
    return source


def files_to_fetch(files) -> list[str]:
    """The files of a repository listing `files` that its layout reads: the small ones
    (`SMALL_FILES`) and one set of weights; every file when no known layout's weights are
    there (a layout this module does not know reads what it needs from the whole)."""
    files = set(files)
    small = [f for f in SMALL_FILES if f in files]
    if {"model.weights.h5", "metadata.json"} <= files:  # a keras-hub preset
        return small + ["model.weights.h5"]
    if "bert_config.json" in files:  # Google's release: one TF1 checkpoint's files
        return small + sorted(f for f in files if "/" not in f and f.startswith("bert_model.ckpt"))
    for name in _HF_WEIGHTS:
        if name in files:
            if not name.endswith(".index.json"):
                return small + [name]
            stem = name[:-len(".index.json")].rsplit(".", 1)
            return small + [name] + sorted(
                f for f in files if "/" not in f and f.endswith("." + stem[1])
                and f.startswith(stem[0] + "-"))
    return sorted(files)


def _huggingface(source: str) -> str:
    repo, _, revision = source[len(HF_SCHEME):].partition("@")
    if not _HF_ID.match(repo) or (revision == "" and "@" in source):
        raise HubIdError(f"{source}: a Hugging Face id is {HF_SCHEME}ORG/NAME or "
                         f"{HF_SCHEME}ORG/NAME@REVISION")
    hub = _require("huggingface_hub", source)
    from huggingface_hub.errors import CachedRepoTreeNotFoundError

    revision = revision or None
    try:
        # The small files first: the listing of the repository comes with them into the
        # library's cache (online or not), and it decides which weights to fetch.
        folder = hub.snapshot_download(repo, revision=revision, allow_patterns=list(SMALL_FILES))
        try:
            listing = [f.path for f in hub.get_cached_repo_tree(repo, revision=revision)]
        except CachedRepoTreeNotFoundError:  # a cache written by an older release
            listing = [posixpath.relpath(os.path.join(d, f), folder).replace(os.sep, "/")
                       for d, _, names in os.walk(folder) for f in names]
        return hub.snapshot_download(repo, revision=revision,
                                     allow_patterns=files_to_fetch(listing))
    except Exception as error:  # noqa: BLE001 -- the library's errors become one line each
        raise HubIdError(_hf_message(source, hub, error)) from None


def _hf_message(source: str, hub, error: Exception) -> str:
    import importlib

    errors = importlib.import_module("huggingface_hub.errors")
    constants = importlib.import_module("huggingface_hub.constants")
    if isinstance(error, errors.GatedRepoError):
        return (f"{source} is gated: accept its terms on the Hub, then set HF_TOKEN (or run "
                "`hf auth login`)")
    if isinstance(error, errors.RepositoryNotFoundError):
        return (f"{source}: no such repository on {constants.ENDPOINT} (check the id; a "
                "private one needs HF_TOKEN)")
    if isinstance(error, errors.RevisionNotFoundError):
        return f"{source}: no such revision (a branch, tag or commit of the repository)"
    if isinstance(error, errors.LocalEntryNotFoundError):
        cache = constants.HF_HUB_CACHE
        if constants.HF_HUB_OFFLINE:
            return (f"{source} is not in the Hugging Face cache ({cache}) and HF_HUB_OFFLINE is "
                    "set: fetch it once online (unset HF_HUB_OFFLINE) or point HF_HUB_CACHE "
                    "at a cache that holds it")
        return (f"{source}: {constants.ENDPOINT} cannot be reached and the Hugging Face cache "
                f"({cache}) does not hold it: check the connection or HF_ENDPOINT")
    first = " ".join(str(error).strip().splitlines()[:1])
    return f"{source}: {type(error).__name__}: {first}"


def _kaggle(source: str) -> str:
    handle = source[len(KAGGLE_SCHEME):]
    if not _KAGGLE_ID.match(handle):
        raise HubIdError(f"{source}: a Kaggle id is {KAGGLE_SCHEME}OWNER/MODEL/FRAMEWORK/"
                         "VARIATION or .../VARIATION/VERSION")
    kagglehub = _require("kagglehub", source)
    try:
        return kagglehub.model_download(handle)
    except Exception as error:  # noqa: BLE001 -- the library's errors become one line each
        raise HubIdError(_kaggle_message(source, error)) from None


def _kaggle_message(source: str, error: Exception) -> str:
    import requests
    from kagglehub.config import get_cache_folder
    from kagglehub.exceptions import KaggleApiHTTPError, UnauthenticatedError

    if isinstance(error, KaggleApiHTTPError):
        status = getattr(error.response, "status_code", None)
        if status == 404:
            return (f"{source}: no such model on Kaggle (check the owner, model, framework, "
                    "variation and version)")
        if status in (401, 403):
            return (f"{source}: Kaggle refused it: set KAGGLE_API_TOKEN (or KAGGLE_USERNAME "
                    "and KAGGLE_KEY) and accept the model's license on its page")
    if isinstance(error, UnauthenticatedError):
        return (f"{source}: Kaggle needs credentials: set KAGGLE_API_TOKEN (or KAGGLE_USERNAME "
                "and KAGGLE_KEY)")
    if isinstance(error, requests.exceptions.ConnectionError):
        pin = ("" if source.count("/") == 6 else
               " (offline, kagglehub reads an id from its cache only with its VERSION)")
        return (f"{source}: Kaggle cannot be reached and kagglehub's cache "
                f"({get_cache_folder()}) does not hold it: check the connection{pin}")
    first = " ".join(str(error).strip().splitlines()[:1])
    return f"{source}: {type(error).__name__}: {first}"


def _require(module: str, source: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise HubIdError(f"{source} needs the {module} package: {INSTALL}") from None
