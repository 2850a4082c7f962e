"""What the benchmarks in `bench/` share; none of it is run by itself. A benchmark imports
these, never another benchmark (`tests/bench/test_layout.py`).

* `common`: the shared setup (import it first: thread pools, the standard library's
  `tokenize` unshadowed), host description, interleaved timing, tables, ONNX Runtime, a
  `keras-bert serve` subprocess;
* `sizes`: the model sizes by name, from `keras_bert.config.PRESETS`;
* `texts`: corpus spans of a length, the Rotten Tomatoes split;
* `hf_models`: a Hugging Face model directory, its ONNX file, our export of it;
* `serving_contenders`, `serving_report`, `serving_precisions`: `serving_latency.py`'s
  contender processes, its tables, its int8 SavedModels and accuracy per precision;
* `litert_spans`: the tagger's and span QA's contenders of the LiteRT benchmarks;
* `accelerator_data`, `accelerator_step`, `accelerator_profile`, `accelerator_xplane`:
  `accelerator.py`'s data that travels, its pretraining row, its profile and trace reader.
"""
