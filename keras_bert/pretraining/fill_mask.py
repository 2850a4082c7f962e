"""`TextPretrainer.predict`: the likeliest word pieces for each `[MASK]` written in a text,
from the masked-LM head."""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf


def fill_masks(pretrainer, preprocessor, texts, top_k: int,
               batch_size: int) -> dict[str, np.ndarray]:
    """`tokens`, `probabilities` (`[texts, masks, top_k]`, best first; "" and 0 past a
    text's masks) and `num_masks` of `texts` (a list of strings) under `pretrainer` (a
    `BertPretrainer`), packed by `preprocessor`. Masks beyond the sequence length are not
    read."""
    from keras_bert.text.tokenizer import BertTokenizer

    if isinstance(texts, (str, bytes)):
        raise TypeError("predict takes a list of texts, not a single string")
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("predict takes a non-empty list of texts (strings)")

    tokenizer = preprocessor.tokenizer
    # The text's own "[MASK]" must stay one token, which the plain tokenizer would split.
    marking = BertTokenizer(tokenizer.vocab, lower_case=tokenizer.lower_case,
                            preserve_special_tokens=True, rules=tokenizer.rules)
    mask_id = tokenizer.special_token_ids["mask"]
    tokens, probabilities, counts = [], [], []
    for start in range(0, len(texts), batch_size):
        chunk = tf.constant(texts[start:start + batch_size])
        packed = preprocessor.pack([marking.tokenize(chunk)])
        ids = packed["input_word_ids"].numpy()
        masks = [np.flatnonzero(row == mask_id) for row in ids]
        width = max(1, max(len(m) for m in masks))
        positions = np.zeros((len(ids), width), np.int32)
        for row, found in enumerate(masks):
            positions[row, :len(found)] = found
        logits = pretrainer({**packed, "masked_lm_positions": positions},
                            training=False)["mlm_logits"]
        probs = keras.ops.convert_to_numpy(keras.ops.softmax(
            keras.ops.cast(logits, "float32"), axis=-1))
        best = np.argsort(-probs, axis=-1)[..., :top_k]
        for row, found in enumerate(masks):
            counts.append(len(found))
            tokens.append([[tokenizer.vocab[i] if m < len(found) else "" for i in ids_]
                           for m, ids_ in enumerate(best[row])])
            probabilities.append([[float(probs[row, m, i]) if m < len(found) else 0.0
                                   for i in ids_] for m, ids_ in enumerate(best[row])])
    width = max((len(t) for t in tokens), default=1)
    pad = [""] * top_k
    return {"tokens": np.array([t + [pad] * (width - len(t)) for t in tokens], dtype=str),
            "probabilities": np.array([p + [[0.0] * top_k] * (width - len(p))
                                       for p in probabilities], np.float32),
            "num_masks": np.array(counts, np.int32)}


__all__ = ["fill_masks"]
