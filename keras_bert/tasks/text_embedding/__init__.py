"""Sentence embeddings: `TextEmbedder`, one vector per text (pooled, [CLS], mean or the last
four layers), trained on paraphrase pairs with in-batch negatives."""
