"""Data: pretraining corpora, NSP example creation, tf.data pipelines, TFRecords."""
