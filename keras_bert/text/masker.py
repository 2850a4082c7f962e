"""`BertMasker`: BERT's masked-LM corruption of packed inputs, in-graph and batched.

The rule of the original `create_pretraining_data.py`:
- candidates are the real tokens that are not special (`[CLS]`, `[SEP]`, padding, ...);
  with whole-word masking a word is its first WordPiece plus the `##` pieces that follow;
- a sequence of `n` real tokens (special ones included) gets
  `min(max_predictions, max(1, round(n * mask_rate)))` predictions (round half to even);
- words are visited in random order and taken while they fit that budget (a word that would
  overflow it is skipped, not truncated);
- each chosen token becomes `[MASK]` with probability 80%, stays unchanged with 10%, and
  becomes a uniformly random vocabulary id with 10%.

Randomness is stateless: the same `seed` gives the same masks, and a pipeline that feeds a new
seed per element (`tf.data.Dataset.random(..., rerandomize_each_iteration=True)`) gets new
masks every epoch (dynamic masking).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import tensorflow as tf


def continuation_flags(vocab: Sequence[str]) -> np.ndarray:
    """`flags[id]` is True for WordPiece continuation tokens (`##...`)."""
    return np.array([token.startswith("##") for token in vocab], dtype=bool)


class BertMasker(tf.Module):
    """Masks packed BERT inputs for the masked-LM objective.

    Args:
      vocab_size: ids for the random replacement are drawn from `[0, vocab_size)`.
      mask_id: the `[MASK]` id.
      special_ids: ids never masked (`[CLS]`, `[SEP]`, `[PAD]`, ...).
      max_predictions: `max_predictions_per_seq` (the width of the outputs).
      mask_rate: fraction of tokens to predict (0.15).
      whole_word: mask all the pieces of a word together (needs `continuation`).
      continuation: bool per vocab id, True for `##` pieces (see `continuation_flags`).
      mask_token_rate: the share of predicted tokens replaced by `[MASK]` (80%).
      random_token_rate: the share replaced by a random id (10%; the rest stay unchanged).
    """

    def __init__(self, vocab_size: int, mask_id: int, special_ids: Iterable[int],
                 max_predictions: int = 20, mask_rate: float = 0.15, whole_word: bool = False,
                 continuation: np.ndarray | None = None, mask_token_rate: float = 0.8,
                 random_token_rate: float = 0.1, name: str | None = None):
        super().__init__(name=name)
        if not 0.0 < mask_rate < 1.0:
            raise ValueError(f"mask_rate must be in (0, 1), got {mask_rate}")
        if max_predictions < 1:
            raise ValueError(f"max_predictions must be positive, got {max_predictions}")
        if mask_token_rate < 0 or random_token_rate < 0 or \
                mask_token_rate + random_token_rate > 1:
            raise ValueError("mask_token_rate and random_token_rate must be >= 0 and sum to <= 1")
        if whole_word and continuation is None:
            raise ValueError("whole_word masking needs the `continuation` flags of the vocab")
        if continuation is not None and len(continuation) != vocab_size:
            raise ValueError(f"continuation has {len(continuation)} flags for a vocab of "
                             f"{vocab_size}")
        self.vocab_size = int(vocab_size)
        self.mask_id = int(mask_id)
        self.special_ids = tf.constant(sorted({int(i) for i in special_ids}), tf.int32)
        self.max_predictions = int(max_predictions)
        self.mask_rate = float(mask_rate)
        self.whole_word = bool(whole_word)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        self.continuation = (tf.constant(np.asarray(continuation, bool))
                             if continuation is not None else None)

    # ----- choosing what to predict ---------------------------------------------------------

    def _candidates(self, ids, mask):
        special = tf.reduce_any(ids[:, :, None] == self.special_ids[None, None, :], axis=-1)
        return tf.logical_and(tf.cast(mask, tf.bool), tf.logical_not(special))

    def _word_starts(self, ids, candidates):
        if not self.whole_word:
            return candidates
        is_piece = tf.gather(self.continuation, ids)
        previous = tf.pad(candidates[:, :-1], [[0, 0], [1, 0]])
        continues = tf.logical_and(is_piece, previous)
        return tf.logical_and(candidates, tf.logical_not(continues))

    def _budget(self, mask):
        num_tokens = tf.reduce_sum(tf.cast(mask, tf.float32), axis=1)
        wanted = tf.cast(tf.round(num_tokens * self.mask_rate), tf.int32)
        return tf.minimum(self.max_predictions, tf.maximum(1, wanted))

    def select(self, ids, mask, seed):
        """Bool `[batch, seq]`: the positions to predict."""
        candidates = self._candidates(ids, mask)
        starts = self._word_starts(ids, candidates)
        budget = self._budget(mask)
        seq = tf.shape(ids)[1]
        # Random visiting order of the words (non-starts are visited last and never taken).
        priority = tf.random.stateless_uniform(tf.shape(ids), seed)
        priority = tf.where(starts, priority, 2.0)
        order = tf.argsort(priority, axis=1, stable=True)  # [batch, seq] positions
        # Word id of every position and the length (in pieces) of every word.
        word_id = tf.cumsum(tf.cast(starts, tf.int32), axis=1) - 1
        batch = tf.shape(ids)[0]
        flat_word = word_id + tf.range(batch)[:, None] * seq
        lengths = tf.math.unsorted_segment_sum(
            tf.reshape(tf.cast(candidates, tf.int32), [-1]),
            tf.reshape(tf.where(candidates, flat_word, batch * seq), [-1]), batch * seq + 1)
        lengths = tf.reshape(lengths[:-1], [batch, seq])  # [batch, word]
        start_word = tf.gather(word_id, order, batch_dims=1)
        is_word = tf.gather(starts, order, batch_dims=1)
        word_len = tf.where(is_word, tf.gather(lengths, tf.maximum(start_word, 0), batch_dims=1),
                            0)
        if self.whole_word:
            taken = self._greedy_fit(word_len, is_word, budget)
        else:  # every word is one token: the first `budget` in the random order
            taken = tf.logical_and(is_word, tf.range(seq)[None, :] < budget[:, None])
        # Back from visiting order to words, then to every piece of each word.
        word_taken = tf.scatter_nd(
            tf.stack([tf.repeat(tf.range(batch), seq),
                      tf.reshape(tf.where(is_word, start_word, seq), [-1])], axis=1),
            tf.reshape(tf.cast(taken, tf.int32), [-1]), [batch, seq + 1])[:, :seq]
        piece_taken = tf.gather(word_taken, tf.maximum(word_id, 0), batch_dims=1)
        return tf.logical_and(candidates, piece_taken > 0)

    @staticmethod
    def _greedy_fit(word_len, is_word, budget):
        """Visits words in order; takes one when it still fits the budget, else skips it.

        A `tf.while_loop` over the visiting order that stops after the last word of any row
        or as soon as every row has used its whole budget (nothing fits any more): usually
        a few dozen steps instead of one per position.
        """
        batch, width = tf.shape(word_len)[0], tf.shape(word_len)[1]
        lengths, valid = tf.transpose(word_len), tf.transpose(is_word)  # [order, batch]
        # At least one step: a TensorArray of unknown element shape cannot stack empty.
        steps = tf.maximum(
            tf.reduce_max(tf.where(is_word, tf.range(1, width + 1)[None, :], 0)), 1)

        def not_done(step, count, taken):
            return tf.logical_and(step < steps, tf.reduce_any(count < budget))

        def visit(step, count, taken):
            take = tf.logical_and(valid[step], count + lengths[step] <= budget)
            return step + 1, count + tf.where(take, lengths[step], 0), taken.write(step, take)

        _, _, taken = tf.while_loop(
            not_done, visit,
            (tf.constant(0), tf.zeros_like(budget),
             tf.TensorArray(tf.bool, size=0, dynamic_size=True, element_shape=[None])))
        taken = tf.transpose(taken.stack())  # [batch, steps run]
        visited = tf.shape(taken)[1]
        return tf.pad(tf.reshape(taken, [batch, visited]), [[0, 0], [0, width - visited]])

    # ----- corrupting and packing the outputs -----------------------------------------------

    def __call__(self, inputs: dict, seed) -> dict:
        """Masks `inputs["input_word_ids"]` (int `[batch, seq]`); `seed` is an int `[2]` tensor.

        Returns a copy of `inputs` with the corrupted `input_word_ids` plus
        `masked_lm_positions`, `masked_lm_ids` (int32) and `masked_lm_weights` (float32),
        each `[batch, max_predictions]`, positions ascending, padded with zeros.
        """
        ids = tf.cast(inputs["input_word_ids"], tf.int32)
        mask = inputs["input_mask"]
        seed = tf.cast(seed, tf.int64)
        selected = self.select(ids, mask, tf.random.experimental.stateless_fold_in(seed, 0))
        action = tf.random.stateless_uniform(
            tf.shape(ids), tf.random.experimental.stateless_fold_in(seed, 1))
        random_ids = tf.random.stateless_uniform(
            tf.shape(ids), tf.random.experimental.stateless_fold_in(seed, 2),
            minval=0, maxval=self.vocab_size, dtype=tf.int32)
        replacement = tf.where(
            action < self.mask_token_rate, self.mask_id,
            tf.where(action < self.mask_token_rate + self.random_token_rate, random_ids, ids))
        corrupted = tf.where(selected, replacement, ids)

        seq = tf.shape(ids)[1]
        positions = tf.range(seq)[None, :]
        key = tf.where(selected, positions, seq + positions)
        width = self.max_predictions
        key = tf.pad(key, [[0, 0], [0, tf.maximum(width - seq, 0)]],
                     constant_values=2 * seq + width)
        first = tf.sort(key, axis=1)[:, :width]
        weights = first < seq
        masked_positions = tf.where(weights, first, 0)
        masked_ids = tf.where(weights, tf.gather(ids, masked_positions, batch_dims=1), 0)
        out = dict(inputs)
        out.update(input_word_ids=corrupted, masked_lm_positions=masked_positions,
                   masked_lm_ids=masked_ids, masked_lm_weights=tf.cast(weights, tf.float32))
        return out
