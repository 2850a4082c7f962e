"""Parity on real weights: AntiBERTy (a `BertForMaskedLM`-style antibody language model, 8
layers, hidden 512, vocab 25) loaded into `BertPretrainer` vs Hugging Face `BertForMaskedLM`.

The checkpoint is the `pytorch_model.bin` the `antiberty` package ships: tied decoder weights,
a pooler but no next sentence head, plus AntiBERTy's own species/chain/graft heads (ignored).
The inputs are real antibody variable domains, tokenized by AntiBERTy's rules (one token per
residue, `[CLS] ... [SEP]`), with some residues replaced by `[MASK]`.
"""

import os

import numpy as np
import pytest

from keras_bert.checkpoints.pretraining_heads import load_hf_pretrainer
from keras_bert.models.pretrainer import masked_lm_loss
from tests.support.reference import require

pytestmark = pytest.mark.needs_torch

# Heavy- and light-chain variable domains of approved antibodies (and one VH fragment).
SEQUENCES = [
    # trastuzumab VH
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAE"
    "DTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS",
    # trastuzumab VL
    "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYC"
    "QQHYTTPPTFGQGTKVEIK",
    # adalimumab VH
    "EVQLVESGGGLVQPGRSLRLSCAASGFTFDDYAMHWVRQAPGKGLEWVSAITWNSGHIDYADSVEGRFTISRDNAKNSLYLQMNSLRAE"
    "DTAVYYCAKVSYLSTASSLDYWGQGTLVTVSS",
    # adalimumab VL
    "DIQMTQSPSSLSASVGDRVTITCRASQGIRNYLAWYQQKPGKAPKLLIYAASTLQSGVPSRFSGSGSGTDFTLTISSLQPEDVATYYC"
    "QRYNRAPYTFGQGTKVEIK",
    # a human VH3 framework fragment (shorter: the batch has padding)
    "EVQLVESGGGLVQPGGSLRLSCAASGFTFSSYAMS",
]
MASK_RATE = 0.15


def _antiberty_paths():
    package = require("antiberty")
    root = os.path.join(os.path.dirname(package.__file__), "trained_models")
    return os.path.join(root, "AntiBERTy_md_smooth"), os.path.join(root, "vocab.txt")


def _batch(vocab: dict[str, int], seed: int = 0):
    """Tokens as AntiBERTy's tokenizer makes them; ~15% residues masked per sequence."""
    rng = np.random.default_rng(seed)
    seq_length = max(len(s) for s in SEQUENCES) + 2
    predictions = max(int(round(len(s) * MASK_RATE)) for s in SEQUENCES)
    n = len(SEQUENCES)
    ids = np.full((n, seq_length), vocab["[PAD]"], np.int32)
    mask = np.zeros((n, seq_length), np.int32)
    positions = np.zeros((n, predictions), np.int32)
    labels = np.zeros((n, predictions), np.int32)
    weights = np.zeros((n, predictions), np.float32)
    for row, sequence in enumerate(SEQUENCES):
        tokens = [vocab["[CLS]"]] + [vocab[residue] for residue in sequence] + [vocab["[SEP]"]]
        ids[row, :len(tokens)] = tokens
        mask[row, :len(tokens)] = 1
        count = int(round(len(sequence) * MASK_RATE))
        chosen = np.sort(rng.choice(np.arange(1, len(sequence) + 1), count, replace=False))
        positions[row, :count], labels[row, :count] = chosen, ids[row, chosen]
        weights[row, :count] = 1.0
    unmasked = ids.copy()
    for row in range(n):
        ids[row, positions[row, weights[row] > 0]] = vocab["[MASK]"]
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": np.zeros_like(ids),
            "masked_lm_positions": positions, "masked_lm_ids": labels,
            "masked_lm_weights": weights, "next_sentence_labels": np.zeros(n, np.int32)}, unmasked


@pytest.fixture(scope="module")
def antiberty():
    torch = require("torch")
    transformers = require("transformers")
    model_dir, vocab_file = _antiberty_paths()
    reference = transformers.BertForMaskedLM.from_pretrained(model_dir).eval()
    with open(vocab_file, encoding="utf-8") as f:
        vocab = {line.rstrip("\n"): i for i, line in enumerate(f)}
    return torch, transformers, reference, vocab, model_dir, vocab_file


def test_antiberty_masked_lm_matches_transformers(antiberty):
    torch, transformers, reference, vocab, model_dir, vocab_file = antiberty
    batch, unmasked = _batch(vocab)
    # Our hand tokenization is AntiBERTy's (its runner joins residues with spaces).
    # (transformers 5 names the argument `vocab`; `vocab_file=` is silently ignored there.)
    tokenizer = transformers.BertTokenizer(vocab=vocab_file, do_lower_case=False)
    encoded = tokenizer([" ".join(s) for s in SEQUENCES], padding=True, return_tensors="np")
    np.testing.assert_array_equal(encoded["input_ids"], unmasked)

    with pytest.warns(UserWarning, match="no nsp weights"):  # BertForMaskedLM: no NSP head
        ours = load_hf_pretrainer(model_dir)
    assert ours.config.num_layers == 8 and ours.config.hidden_size == 512
    assert ours.config.vocab_size == 25

    with torch.no_grad():
        ref = reference(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                        attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                        token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    rows = np.arange(len(SEQUENCES))[:, None]
    ref_logits = ref.logits.numpy()[rows, batch["masked_lm_positions"]]
    logits = ours(batch)["mlm_logits"].numpy()

    real = batch["masked_lm_weights"] > 0
    diff = np.abs(logits[real] - ref_logits[real]).max()
    agree = (logits[real].argmax(-1) == ref_logits[real].argmax(-1)).sum()
    accuracy = (logits[real].argmax(-1) == batch["masked_lm_ids"][real]).mean()
    print(f"AntiBERTy masked LM: {real.sum()} masked positions, max |diff| {diff:.2e}, "
          f"top-1 agreement {agree}/{real.sum()}, top-1 accuracy {accuracy:.2f}")
    assert diff <= 1e-4, diff
    np.testing.assert_array_equal(logits[real].argmax(-1), ref_logits[real].argmax(-1))

    # The loss agrees with torch's cross-entropy, and the real model recovers most residues.
    ref_loss = torch.nn.functional.cross_entropy(
        torch.tensor(ref_logits[real]), torch.tensor(batch["masked_lm_ids"][real]).long())
    loss = masked_lm_loss(batch["masked_lm_ids"], batch["masked_lm_weights"], logits)
    np.testing.assert_allclose(float(loss), float(ref_loss), rtol=1e-4)
    assert accuracy > 0.5, accuracy
