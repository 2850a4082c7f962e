"""`create-pretraining-data` as an Apache Beam pipeline: the same examples as the
single-process writer (`keras_bert.pretraining.record_writer`), made in parallel on any Beam runner.

    files -> documents (one file per element; `Reshuffle`d) -> keyed, tokenized documents
          -> pool: Top.Smallest(pool_size) by key (a side input)
          -> examples per document (`DocumentExampleMaker`) -> Reshuffle -> WriteToTFRecord

Every step is a plain Beam transform, so the DirectRunner (the default, on this machine's
cores) and Dataflow, Flink or Spark run the same code; Beam's own pipeline options pass
through (`beam_args`). Counters `documents`, `examples`, `tokens`, `masked_positions` (namespace
`keras_bert`) are Beam metrics. Workers build the tokenizer from the vocabulary shipped in the
pipeline itself (no shared file system needed for it); input files are read through Beam's
`FileSystems`, so `gs://`, `s3://` and local paths all work.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence

from keras_bert.pretraining.dataset import PretrainingOptions
from keras_bert.pretraining.document_examples import DEFAULT_POOL_SIZE, TOO_FEW_DOCUMENTS
from keras_bert.pretraining.record_writer import COUNTERS
from keras_bert.pretraining.tfrecord import shard_paths

RUNNERS = {"direct": "DirectRunner", "dataflow": "DataflowRunner", "flink": "FlinkRunner",
           "spark": "SparkRunner", "prism": "PrismRunner"}
NAMESPACE = "keras_bert"
PROCESS_PREFIX = "examples_in_process_"  # + the worker's pid: one counter per process


def _beam():
    try:
        import apache_beam as beam
    except ImportError:
        raise ImportError("The Beam runner needs apache-beam: pip install "
                          "'keras-bert-tf[beam]'") from None
    return beam


def read_file_documents(path: str, fmt: str, text_field: str):
    """The documents (lists of sentences) of one corpus file, local or remote."""
    from apache_beam.io.filesystems import FileSystems

    from keras_bert.data.corpus import guess_format, read_documents

    with tempfile.TemporaryDirectory() as tmp:
        local = path
        if FileSystems.get_scheme(path) not in (None, "file"):
            local = os.path.join(tmp, os.path.basename(path))
            with FileSystems.open(path) as src, open(local, "wb") as dst:
                shutil.copyfileobj(src, dst)
        chosen = guess_format(local) if fmt == "auto" else fmt
        yield from read_documents(local, chosen, text_field)


def expand_patterns(patterns: Sequence[str]) -> list[str]:
    """Input paths with Beam's glob patterns (`gs://bucket/corpus/part-*`) expanded."""
    from apache_beam.io.filesystems import FileSystems

    files = []
    for pattern in patterns:
        if not any(c in pattern for c in "*?["):
            files.append(pattern)
            continue
        matched = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
        if not matched:
            raise FileNotFoundError(f"no input file matches {pattern}")
        files.extend(matched)
    return files


def _dofns(beam):
    """The DoFns, defined once Beam is imported (Beam stays an optional dependency)."""
    return _tokenize_documents(beam), _make_examples(beam)


def _tokenize_documents(beam):
    """The DoFn that tokenizes documents."""
    from apache_beam.metrics import Metrics

    class TokenizeDocuments(beam.DoFn):
        """A batch of documents -> `(key, token document)` pairs."""

        def __init__(self, vocab: list[str], lower_case: bool, rules: str):
            self._args = (vocab, lower_case, rules)
            self._documents = Metrics.counter(NAMESPACE, "documents")

        def setup(self):
            from keras_bert.text import BertTokenizer

            vocab, lower_case, rules = self._args
            self._tokenizer = BertTokenizer(vocab, lower_case=lower_case, rules=rules)

        def process(self, documents):
            from keras_bert.pretraining.dataset import tokenize_documents
            from keras_bert.pretraining.document_examples import clean_document, document_key

            documents = list(documents)
            for sentences, ids in zip(documents,
                                      tokenize_documents(documents, self._tokenizer),
                                      strict=True):
                tokens = clean_document(ids)
                if tokens:
                    self._documents.inc()
                    yield document_key(sentences), tokens

    return TokenizeDocuments


def _make_examples(beam):
    """The DoFn that makes a document's pretraining examples."""
    from apache_beam.metrics import Metrics

    class MakeExamples(beam.DoFn):
        """`(key, token document)` + the pool -> serialized `tf.train.Example`s."""

        def __init__(self, vocab: list[str], lower_case: bool, rules: str,
                     options: PretrainingOptions):
            self._args = (vocab, lower_case, rules)
            self._options = options
            self._counters = {name: Metrics.counter(NAMESPACE, name)
                              for name in COUNTERS if name != "documents"}
            self._pool_entries = None
            self._process = None

        def setup(self):
            from keras_bert.pretraining.document_examples import DocumentExampleMaker
            from keras_bert.text import BertTokenizer

            vocab, lower_case, rules = self._args
            self._maker = DocumentExampleMaker(
                BertTokenizer(vocab, lower_case=lower_case, rules=rules), self._options)

        def process(self, element, pool_entries):
            from keras_bert.pretraining.document_examples import RandomNextPool, example_rows
            from keras_bert.pretraining.record_writer import count_features
            from keras_bert.pretraining.tfrecord import serialize_example

            if self._pool_entries is not pool_entries:  # once per side input, not per element
                self._pool = (RandomNextPool(pool_entries)
                              if RandomNextPool.distinct(pool_entries) >= 2 else None)
                self._pool_entries = pool_entries
            if self._pool is None:  # too few documents: `run_pipeline` says so after the run
                return
            key, document = element
            features = self._maker(key, document, self._pool)
            if not features:
                return
            for name, value in count_features(features).items():
                self._counters[name].inc(value)
            if self._process is None:  # how the work splits over worker processes
                self._process = Metrics.counter(NAMESPACE, f"{PROCESS_PREFIX}{os.getpid()}")
            self._process.inc(len(features["next_sentence_labels"]))
            for row in example_rows(features):
                yield serialize_example(row)

    return MakeExamples


def build_pipeline(pipeline, files: Sequence[str], output: str, vocab: list[str],
                   lower_case: bool, rules: str, fmt: str = "auto", text_field: str = "text",
                   num_shards: int = 1, options: PretrainingOptions | None = None,
                   pool_size: int = DEFAULT_POOL_SIZE):
    """Adds the transforms to `pipeline` (a `beam.Pipeline`); returns the written paths'
    `PCollection`."""
    beam = _beam()
    if pool_size < 2:
        raise ValueError(f"the random-next pool needs at least 2 documents, got {pool_size}")
    tokenize, make_examples = _dofns(beam)
    options = options or PretrainingOptions()
    documents = (pipeline
                 | "Files" >> beam.Create(sorted(files))
                 | "SpreadFiles" >> beam.Reshuffle()
                 | "ReadDocuments" >> beam.FlatMap(read_file_documents, fmt, text_field)
                 | "SpreadDocuments" >> beam.Reshuffle()
                 | "Batch" >> beam.BatchElements(min_batch_size=8, max_batch_size=256)
                 | "Tokenize" >> beam.ParDo(tokenize(vocab, lower_case, rules)))
    pool = (documents
            | "RandomNextPool" >> beam.combiners.Top.Smallest(pool_size, key=lambda e: e[0]))
    examples = (documents
                | "MakeExamples" >> beam.ParDo(make_examples(vocab, lower_case, rules, options),
                                               beam.pvalue.AsSingleton(pool))
                | "Shuffle" >> beam.Reshuffle())
    return examples | "Write" >> beam.io.WriteToTFRecord(
        output, num_shards=num_shards,
        shard_name_template="" if num_shards == 1 else "-SSSSS-of-NNNNN")


def run_pipeline(files: Sequence[str], output: str, tokenizer, runner: str = "direct",
                 beam_args: Sequence[str] = (), workers: int | None = None,
                 **kwargs) -> dict:
    """Runs the pipeline to completion; returns the counters (`COUNTERS`) Beam reported,
    and under `"processes"` the examples each worker process made (`{pid: count}`).

    `runner`: a name of `RUNNERS` or a Beam runner class name; `beam_args`: Beam pipeline
    options (`--project=...`, `--temp_location=...`); `workers`: DirectRunner processes.
    """
    beam = _beam()
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.options.pipeline_options import PipelineOptions

    files = expand_patterns(files)
    args = [f"--runner={RUNNERS.get(runner.lower(), runner)}", *beam_args]
    if not any(a.startswith("--default_sdk_harness_log_level") for a in beam_args):
        args.append("--default_sdk_harness_log_level=WARNING")  # workers: no INFO chatter
    if workers:
        args += [f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"]
    if not output.startswith(("gs://", "s3://")):
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with beam.Pipeline(options=PipelineOptions(args)) as pipeline:
        build_pipeline(pipeline, files, output, tokenizer.vocab, tokenizer.lower_case,
                       tokenizer.rules, **kwargs)
    result = pipeline.result
    counters = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    totals: dict = dict.fromkeys(COUNTERS, 0)
    totals["processes"] = {}
    for counter in counters:
        name, value = counter.key.metric.name, counter.committed or counter.attempted or 0
        if name.startswith(PROCESS_PREFIX):
            pid = int(name[len(PROCESS_PREFIX):])
            totals["processes"][pid] = totals["processes"].get(pid, 0) + value
        else:
            totals[name] += value
    if not totals["examples"]:  # Beam has written empty shards: take them back, say why
        from apache_beam.io.filesystems import FileSystems

        written = [p for p in shard_paths(output, kwargs.get("num_shards", 1))
                   if FileSystems.exists(p)]
        if written:
            FileSystems.delete(written)
        raise ValueError("the corpus gave no pretraining examples: "
                         f"{TOO_FEW_DOCUMENTS.format(totals['documents'])} (identical "
                         "documents count as one); nothing was written")
    return totals
