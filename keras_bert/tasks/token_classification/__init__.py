"""Token classification (NER): `TokenClassifier`, one label per word, every word of a long
text read in windows; CoNLL files; entity F1 by seqeval's rules."""
