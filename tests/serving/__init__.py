"""Tests of `keras_bert.serving`."""
