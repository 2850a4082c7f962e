"""Tests of `keras_bert.export`."""
