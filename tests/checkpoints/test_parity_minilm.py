"""Parity on real weights: all-MiniLM-L6-v2 in keras_bert vs Hugging Face `BertModel` (torch).

The token ids come from the reference (Hugging Face) tokenizer so that this test checks the
network and the weight mapping alone; the tokenizer has its own parity tests.
"""

import numpy as np
import pytest

from keras_bert.checkpoints import (
    load_google_dir,
    load_hf_dir,
    save_google_dir,
    with_approximate_gelu,
)
from tests.support.reference import minilm_dir, require

pytestmark = pytest.mark.needs_torch

SENTENCES = [
    "Call me Ishmael.",
    "Some years ago, never mind how long precisely, having little or no money in my purse, "
    "and nothing particular to interest me on shore, I thought I would sail about a little "
    "and see the watery part of the world.",
    "The State of the Union is strong.",
    "Whenever I find myself growing grim about the mouth; whenever it is a damp, drizzly "
    "November in my soul, I account it high time to get to sea as soon as I can.",
    "BERT reads text in both directions at once.",
]
PAIRS = [("How old is the whale?", "The whale was very old."), ("Who is Ahab?", "A captain.")]


@pytest.fixture(scope="module")
def reference():
    torch = require("torch")
    transformers = require("transformers")
    path = minilm_dir()
    model = transformers.BertModel.from_pretrained(path).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
    return torch, model, tokenizer


@pytest.fixture(scope="module")
def ours():
    return load_hf_dir(minilm_dir())


def _run_both(reference, encoder, batch):
    torch, model, _ = reference
    with torch.no_grad():
        ref = model(**{k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()})
    out = encoder({"input_word_ids": batch["input_ids"].astype(np.int32),
                   "input_mask": batch["attention_mask"].astype(np.int32),
                   "input_type_ids": batch["token_type_ids"].astype(np.int32)})
    return ref, out


@pytest.mark.parametrize("pairs", [False, True])
def test_minilm_matches_transformers(reference, ours, pairs):
    _, _, tokenizer = reference
    if pairs:
        batch = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True,
                          return_tensors="np")
        assert batch["token_type_ids"].max() == 1
    else:
        batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
        assert (batch["attention_mask"] == 0).any()  # the batch really has padding
    ref, out = _run_both(reference, ours, batch)
    real = batch["attention_mask"].astype(bool)
    seq_diff = np.abs(out["sequence_output"].numpy()[real] - ref.last_hidden_state.numpy()[real])
    pooled_diff = np.abs(out["pooled_output"].numpy() - ref.pooler_output.numpy())
    assert seq_diff.max() <= 1e-4, seq_diff.max()
    assert pooled_diff.max() <= 1e-4, pooled_diff.max()
    # Every layer, not just the last one (HF hidden_states[0] is the embedding output).
    torch, model, _ = reference
    with torch.no_grad():
        hidden = model(**{k: torch.tensor(v, dtype=torch.long) for k, v in batch.items()},
                       output_hidden_states=True).hidden_states
    for layer, ref_layer in zip(out["encoder_outputs"], hidden[1:], strict=True):
        assert np.abs(layer.numpy()[real] - ref_layer.numpy()[real]).max() <= 1e-4


def test_minilm_through_google_checkpoint_naming(reference, ours, tmp_path):
    """The real weights written as a Google TF1 checkpoint load back as what Google's code
    computes with them: the tanh GELU, transformers' `gelu_new`. As they are (exact GELU),
    Google's layout cannot hold them: asked for, they are approximated."""
    transformers = require("transformers")
    with pytest.raises(ValueError, match="exact .erf. GELU"):
        save_google_dir(ours, str(tmp_path))
    save_google_dir(with_approximate_gelu(ours), str(tmp_path))
    from_google = load_google_dir(str(tmp_path))
    assert from_google.config.hidden_act == "gelu_approximate"
    torch, exact, tokenizer = reference
    tanh = transformers.BertModel.from_pretrained(minilm_dir(), hidden_act="gelu_new").eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="np")
    real = batch["attention_mask"].astype(bool)
    ref, out = _run_both((torch, tanh, tokenizer), from_google, batch)
    assert np.abs(out["sequence_output"].numpy()[real]
                  - ref.last_hidden_state.numpy()[real]).max() <= 1e-4
    assert np.abs(out["pooled_output"].numpy() - ref.pooler_output.numpy()).max() <= 1e-5
    # ... and not what the exact GELU computes: the approximation shows at this tolerance.
    erf, _ = _run_both((torch, exact, tokenizer), from_google, batch)
    assert np.abs(out["pooled_output"].numpy() - erf.pooler_output.numpy()).max() > 1e-5
