"""Text classification: `TextClassifier` (one label per text or pair), `TextRegressor` (one
score), `MultiLabelClassifier` (any number of labels, each with its own threshold), and
distillation of a classifier into a smaller BERT."""
