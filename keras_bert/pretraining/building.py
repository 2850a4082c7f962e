"""The parts `TextPretrainer`'s constructors assemble: a `BertTokenizer` and a
`BertPretrainer`, of a preset size, of a checkpoint, or of a finished first phase."""

from __future__ import annotations


def preset_parts(preset: str, vocab: str | None, lower_case: bool, rules: str | None,
                 seq_length: int, precision: str | None, nsp_loss_weight: float,
                 seed: int | None) -> tuple:
    """`(pretrainer, tokenizer)`: random weights of size `preset` over `vocab` (default: the
    embedded corpus' 8k uncased vocabulary), position embeddings max(512, `seq_length`),
    drawn after `seed` seeds Keras' generator."""
    from keras_bert.data.corpus import DEFAULT_VOCAB
    from keras_bert.models.pretrainer import BertPretrainer
    from keras_bert.text.rules import DEFAULT_RULES
    from keras_bert.text.tokenizer import BertTokenizer
    from keras_bert.training.precision import training_precision

    _seed(seed)
    tokenizer = BertTokenizer(vocab or DEFAULT_VOCAB, lower_case=lower_case if vocab else True,
                              rules=rules or DEFAULT_RULES)
    pretrainer = BertPretrainer.for_vocabulary(preset, tokenizer, seq_length,
                                               training_precision(precision), nsp_loss_weight)
    return pretrainer, tokenizer


def pretrained_parts(source: str, vocab: str | None, lower_case: bool, rules: str | None,
                     precision: str | None, nsp_loss_weight: float, seed: int | None) -> tuple:
    """`(pretrainer, tokenizer)` of checkpoint `source` (a hub id is fetched once), with its
    pretraining heads where it has them; `vocab`: another vocabulary than its own."""
    from keras_bert.checkpoints.formats import load_pretrainer
    from keras_bert.checkpoints.hub_ids import local_checkpoint
    from keras_bert.training.precision import training_precision

    _seed(seed)  # before any new head's weights are drawn
    source = local_checkpoint(source)
    tokenizer = _checkpoint_tokenizer(source, rules, vocab, lower_case)
    return load_pretrainer(source, dtype=training_precision(precision),
                           nsp_loss_weight=nsp_loss_weight), tokenizer


def phase2_parts(phase1, rules: str | None, seq_length: int, precision: str | None,
                 nsp_loss_weight: float, seed: int | None) -> tuple:
    """`(pretrainer, tokenizer)` continuing `phase1` (`keras_bert.pretraining.phases`): its
    config and vocabulary; its weights come with its optimizer state."""
    from keras_bert.pretraining.phases import phase2_pretrainer
    from keras_bert.training.precision import training_precision

    _seed(seed)
    tokenizer = _checkpoint_tokenizer(phase1.model_dir, rules, None, True)
    return phase2_pretrainer(phase1, seq_length, training_precision(precision),
                             nsp_loss_weight), tokenizer


def _seed(seed: int | None) -> None:
    """Seeds Python's, NumPy's, TensorFlow's and Keras' generators (`pretrain --seed`)."""
    if seed is not None:
        import keras

        keras.utils.set_random_seed(int(seed))


def _checkpoint_tokenizer(source: str, rules: str | None, vocab: str | None,
                          lower_case: bool):
    """The tokenizer of checkpoint `source`: its vocabulary and casing unless `vocab` is
    given, its rules unless `rules` is."""
    from keras_bert.checkpoints.conversion import checkpoint_rules, checkpoint_vocab
    from keras_bert.text.tokenizer import BertTokenizer

    rules = rules or checkpoint_rules(source)
    if vocab is None:
        vocab, lower_case = checkpoint_vocab(source)
    return BertTokenizer(vocab, lower_case=lower_case, rules=rules)


__all__ = ["phase2_parts", "preset_parts", "pretrained_parts"]
