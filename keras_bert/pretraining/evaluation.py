"""What a pretraining run is measured on: a held-out split of the documents, stratified by
source, and the baselines its held-out numbers must beat (the most frequent masked token;
the more common next-sentence label)."""

from __future__ import annotations

import collections

import numpy as np


def with_known_length(dataset):
    """`dataset` (finite, the same batches every pass) with its number of batches declared.

    Keras warns "Your input ran out of data" at the end of every pass over a dataset of
    unknown length (ours come from generators); with the length known it stops in time.
    None when the dataset is empty.
    """
    import tensorflow as tf

    batches = int(dataset.reduce(0, lambda count, _: count + 1))
    if not batches:
        return None
    return dataset.apply(tf.data.experimental.assert_cardinality(batches))


def split_documents(sources: list[list], fraction: float) -> tuple[list, list]:
    """(training, held-out) documents: `fraction` of all of them held out, at least 2 when
    there are 10 or more, stratified by source.

    Each source (the documents of one corpus file) gives its share of the held-out count
    (largest remainders), spread evenly over the source, so the held-out set mixes the
    sources as training does: its random-next NSP segments then come from other sources
    as often as in training. Deterministic.
    """
    total = sum(len(docs) for docs in sources)
    if fraction <= 0 or total < 10:
        return [d for docs in sources for d in docs], []
    count = min(max(2, round(fraction * total)), total - 2)
    shares = [count * len(docs) / total for docs in sources]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(sources)), key=lambda i: counts[i] - shares[i])
    for i in by_remainder[:count - sum(counts)]:
        counts[i] += 1
    train, held_out = [], []
    for docs, n in zip(sources, counts, strict=True):
        ids = {int((k + 0.5) * len(docs) / n) for k in range(n)}
        for i, doc in enumerate(docs):
            (held_out if i in ids else train).append(doc)
    return train, held_out


def held_out_scores(pretrainer, dataset) -> dict:
    """What `metrics.json` reports of a held-out `dataset`: the compiled `pretrainer`'s
    losses and accuracies, `mlm_frequency_baseline`, `nsp_majority_baseline`, `examples`."""
    scores = {k: float(v) for k, v in pretrainer.evaluate(
        dataset, return_dict=True, verbose=0).items()}
    scores["mlm_frequency_baseline"] = mlm_frequency_baseline(dataset)
    majority, examples = nsp_majority_baseline(dataset)
    return {**scores, "nsp_majority_baseline": majority, "examples": examples}


def mlm_frequency_baseline(dataset) -> float:
    """Accuracy of always predicting the most frequent masked token of `dataset`."""
    counts: collections.Counter = collections.Counter()
    for batch in dataset:
        weights = batch["masked_lm_weights"].numpy() > 0
        counts.update(batch["masked_lm_ids"].numpy()[weights].tolist())
    total = sum(counts.values())
    return counts.most_common(1)[0][1] / total if total else 0.0


def nsp_majority_baseline(dataset) -> tuple[float, int]:
    """(accuracy of always predicting the more common NSP label of `dataset`, its number of
    examples): the figure held-out NSP accuracy must beat, besides 0.5."""
    labels = np.concatenate([[], *(b["next_sentence_labels"].numpy() for b in dataset)])
    if not len(labels):
        return 0.0, 0
    random_next = float(np.mean(labels == 1))
    return max(random_next, 1.0 - random_next), int(len(labels))
