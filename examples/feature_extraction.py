"""Feature extraction: sentence vectors from the real all-MiniLM-L6-v2 weights, three ways.

`BertEmbedder` turns the encoder into a `keras.Model` returning one float32 vector per text:
`cls` (the last layer at `[CLS]`), `mean` (the masked mean of the last layer; what MiniLM
was trained for) and `concat_last4` (the BERT paper's feature-based recipe: the last four
layers at `[CLS]`, concatenated). Texts go through the same TF Text tokenizer and packer as
training and serving.

Evaluation: `PAIRS` below are 8 pairs of paraphrases written for this example (16
sentences). For each pooling: the mean cosine similarity of paraphrase pairs and of all other
pairs, and the retrieval accuracy: how often a sentence's nearest other sentence is its
paraphrase. The same vectors come from the CLI:
`keras-bert encode MODEL_DIR --pooling mean < lines.txt`.

    python examples/feature_extraction.py            # all 8 pairs
    python examples/feature_extraction.py --quick    # 4 pairs (tests)

Figures (2 shared CPU cores, about 45 s with other jobs running): `mean` retrieves the
paraphrase for 16/16 sentences (similarity 0.656 for paraphrases against 0.108 for other
pairs); `cls` 15/16 (0.823 against 0.608) and `concat_last4` 15/16 (0.971 against 0.937):
MiniLM's `[CLS]` was not trained as a sentence vector, so its margins are far smaller.
"""

from __future__ import annotations

import argparse

import numpy as np
from _shared import DEFAULT_MINILM, minilm_model_dir

PAIRS = [
    ("The whale dived deep below the ship.", "The great fish plunged far beneath the vessel."),
    ("The captain was obsessed with revenge.",
     "The commander could think of nothing but vengeance."),
    ("Taxes on imports will be reduced next year.",
     "Next year the duties on foreign goods will fall."),
    ("The harpooner slept in the same bed as me.", "I shared my bed with the harpoon thrower."),
    ("Congress must fund the new navy.", "The legislature has to pay for the new fleet."),
    ("It rained all night in the harbor town.", "The port village had rain until morning."),
    ("The sailors sang while they worked.", "The crew were singing as they did their jobs."),
    ("Our treaty with France has been signed.", "The agreement with the French was concluded."),
]
POOLINGS = ("cls", "mean", "concat_last4")


def embed(model_dir, texts: list[str], pooling: str, seq_length: int = 32) -> np.ndarray:
    """`[len(texts), dim]` unit vectors of `texts` with `BertEmbedder(pooling)`."""
    from keras_bert.tasks.readers import TextExample
    from keras_bert.tasks.text_classification.readers import text_dataset
    from keras_bert.tasks.text_embedding.network import BertEmbedder

    preprocessor = model_dir.preprocessor().with_length(seq_length)
    embedder = BertEmbedder(model_dir.load_encoder(), pooling=pooling, normalize=True)
    inputs = text_dataset([TextExample(t) for t in texts], preprocessor, batch_size=len(texts))
    return np.asarray(embedder.predict(inputs, verbose=0))


def paraphrase_scores(vectors: np.ndarray) -> dict:
    """Retrieval accuracy and mean similarities; rows 2k and 2k+1 are paraphrases."""
    similarity = vectors @ vectors.T
    n = len(vectors)
    partner = np.arange(n) ^ 1
    others = ~np.eye(n, dtype=bool)
    others[np.arange(n), partner] = False
    nearest = np.argmax(np.where(np.eye(n, dtype=bool), -np.inf, similarity), axis=1)
    return {"retrieval_accuracy": float(np.mean(nearest == partner)),
            "paraphrase_similarity": float(similarity[np.arange(n), partner].mean()),
            "other_similarity": float(similarity[others].mean())}


def main(argv=None) -> dict:
    """Runs the example; returns `{pooling: scores}`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minilm", default=DEFAULT_MINILM, help="converted MiniLM (reused)")
    parser.add_argument("--quick", action="store_true", help="4 pairs")
    args = parser.parse_args(argv)
    pairs = PAIRS[:4] if args.quick else PAIRS
    texts = [t for pair in pairs for t in pair]
    model_dir = minilm_model_dir(args.minilm)
    results = {}
    for pooling in POOLINGS:
        vectors = embed(model_dir, texts, pooling)
        results[pooling] = scores = paraphrase_scores(vectors)
        print(f"{pooling:>12}: dim {vectors.shape[1]:4d}  paraphrase retrieved "
              f"{round(scores['retrieval_accuracy'] * len(texts))}/{len(texts)}  similarity "
              f"paraphrases {scores['paraphrase_similarity']:.3f} others "
              f"{scores['other_similarity']:.3f}")
    return results


if __name__ == "__main__":
    main()
