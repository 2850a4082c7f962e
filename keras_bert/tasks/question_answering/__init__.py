"""Extractive question answering (SQuAD v1.1 / v2.0): `QuestionAnswerer`, contexts of any
length read in windows, answers decoded in the export's graph; the official exact match
and F1."""
