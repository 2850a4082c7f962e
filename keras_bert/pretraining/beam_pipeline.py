"""`create-pretraining-data` as an Apache Beam pipeline: the same examples as the
single-process writer (`keras_bert.pretraining.record_writer`), made in parallel on any Beam runner.

    files -> documents (one file per element; `Reshuffle`d) -> keyed, tokenized documents
          -> pool: Top.Smallest(pool_size) by key (a side input)
          -> examples per document (`DocumentExampleMaker`) -> Reshuffle -> WriteToTFRecord

Every step is a plain Beam transform, so the DirectRunner (the default, on this machine's
cores) and Dataflow, Flink or Spark run the same code; Beam's own pipeline options pass
through (`beam_args`). Beam's DaskRunner gets other steps where its own would lose or repeat
work (`beam_dask`), and the same examples. Counters `documents`, `examples`, `tokens`,
`masked_positions` (namespace `keras_bert`) are Beam metrics (the DaskRunner keeps none).
Workers build the tokenizer from the vocabulary shipped in the pipeline itself (no shared
file system needed for it); input files are read through Beam's `FileSystems`, so `gs://`,
`s3://` and local paths all work.
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
           "spark": "SparkRunner", "prism": "PrismRunner",
           "dask": "apache_beam.runners.dask.dask_runner.DaskRunner"}
DASK_TIMEOUT = 30  # seconds for a Dask scheduler to answer before the run is refused
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
                   pool_size: int = DEFAULT_POOL_SIZE, for_dask: bool = False):
    """Adds the transforms to `pipeline` (a `beam.Pipeline`); returns the written paths'
    `PCollection`. `for_dask`: the DaskRunner's steps (`beam_dask`) where the other runners'
    would lose or repeat work there."""
    beam = _beam()
    if pool_size < 2:
        raise ValueError(f"the random-next pool needs at least 2 documents, got {pool_size}")
    tokenize, make_examples = _dofns(beam)
    options = options or PretrainingOptions()
    names = (pipeline
             | "Files" >> beam.Create(sorted(files))
             | "SpreadFiles" >> beam.Reshuffle())
    if for_dask:
        from keras_bert.pretraining import beam_dask

        buckets = min(len(files), beam_dask.POOL_BUCKETS)
        documents = (names
                     | "ReadDocuments" >> beam.FlatMap(beam_dask.read_file_batches,
                                                       read_file_documents, fmt, text_field)
                     | "Tokenize" >> beam.ParDo(tokenize(vocab, lower_case, rules)))
        pool = beam_dask.random_next_pool(beam, documents, pool_size, buckets)
        maker = beam_dask.joined_examples(make_examples)(vocab, lower_case, rules, options)
        examples = (beam_dask.join_pool(beam, documents, pool, buckets)
                    | "MakeExamples" >> beam.ParDo(maker))
        return beam_dask.write_shards(beam, examples, shard_paths(output, num_shards))
    documents = (names
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
                 dask_address: str | None = None, dask_timeout: int = DASK_TIMEOUT,
                 **kwargs) -> dict:
    """Runs the pipeline to completion; returns the counters (`COUNTERS`) Beam reported,
    and under `"processes"` the examples each worker process made (`{pid: count}`). A runner
    that reports no Beam metrics (the DaskRunner) gives `None` for each counter and no
    processes.

    `runner`: a name of `RUNNERS` or a Beam runner class name; `beam_args`: Beam pipeline
    options (`--project=...`, `--temp_location=...`); `workers`: DirectRunner processes;
    `dask_address`: the DaskRunner's `dask.distributed` scheduler (default: a `LocalCluster`
    the runner starts here), which must answer within `dask_timeout` seconds.
    """
    beam = _beam()
    from apache_beam.options.pipeline_options import PipelineOptions

    files = expand_patterns(files)
    args = pipeline_args(runner, beam_args, workers, dask_address, dask_timeout)
    if not output.startswith(("gs://", "s3://")):
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    pipeline = beam.Pipeline(options=PipelineOptions(args))
    try:
        with pipeline:
            build_pipeline(pipeline, files, output, tokenizer.vocab, tokenizer.lower_case,
                           tokenizer.rules, for_dask=args[0] == f"--runner={RUNNERS['dask']}",
                           **kwargs)
    finally:
        _close_dask_client(pipeline)
    totals = _totals(pipeline.result)
    paths = shard_paths(output, kwargs.get("num_shards", 1))
    if totals["examples"] is None:  # no metrics: the shards' sizes say if any was written
        written = _written_sizes(paths)
        if any(written.values()):
            return totals
    elif totals["examples"]:
        return totals
    _take_back(paths)  # Beam has written empty shards: take them back, say why
    documents = "fewer" if totals["documents"] is None else totals["documents"]
    raise ValueError("the corpus gave no pretraining examples: "
                     f"{TOO_FEW_DOCUMENTS.format(documents)} (identical documents count as "
                     "one); nothing was written")


def pipeline_args(runner: str, beam_args: Sequence[str] = (), workers: int | None = None,
                  dask_address: str | None = None,
                  dask_timeout: int = DASK_TIMEOUT) -> list[str]:
    """Beam's pipeline options for `run_pipeline`."""
    name = RUNNERS.get(runner.lower(), runner)
    args = [f"--runner={name}", *beam_args]
    if not any(a.startswith("--default_sdk_harness_log_level") for a in beam_args):
        args.append("--default_sdk_harness_log_level=WARNING")  # workers: no INFO chatter
    if workers:
        args += [f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"]
    if name == RUNNERS["dask"]:
        from keras_bert.pretraining.beam_dask import dask_args

        args += dask_args(dask_address, dask_timeout)
        if not any(a.startswith(("--dask_npartitions", "--dask_partition_size"))
                   for a in beam_args):
            # Beam puts 128 elements in a Dask partition by default: all the input files
            # in one task, on one worker. One file per partition spreads the files.
            args.append("--dask_partition_size=1")
    elif dask_address:
        raise ValueError(f"a Dask scheduler address needs --runner dask, not {runner}")
    return args


def _close_dask_client(pipeline) -> None:
    """The DaskRunner leaves its `distributed.Client` open after the run: close it."""
    client = getattr(getattr(pipeline, "result", None), "client", None)
    if client is not None:
        client.close()


def _totals(result) -> dict:
    """The `keras_bert` counters of a finished pipeline (`None` each where the runner
    keeps no metrics) and the examples per worker process."""
    from apache_beam.metrics.metric import MetricsFilter

    totals: dict = dict.fromkeys(COUNTERS, 0)
    totals["processes"] = {}
    try:
        metrics = result.metrics()
    except NotImplementedError:  # the DaskRunner collects none
        return {**dict.fromkeys(COUNTERS), "processes": {}}
    for counter in metrics.query(MetricsFilter().with_namespace(NAMESPACE))["counters"]:
        name, value = counter.key.metric.name, counter.committed or counter.attempted or 0
        if name.startswith(PROCESS_PREFIX):
            pid = int(name[len(PROCESS_PREFIX):])
            totals["processes"][pid] = totals["processes"].get(pid, 0) + value
        else:
            totals[name] += value
    return totals


def _written_sizes(paths: Sequence[str]) -> dict[str, int]:
    """The bytes of each of `paths` that exists."""
    from apache_beam.io.filesystems import FileSystems

    found = FileSystems.match(list(paths), limits=[1] * len(paths))
    return {m.path: m.size_in_bytes for result in found for m in result.metadata_list}


def _take_back(paths: Sequence[str]) -> None:
    """Deletes those of `paths` that were written."""
    from apache_beam.io.filesystems import FileSystems

    written = [p for p in paths if FileSystems.exists(p)]
    if written:
        FileSystems.delete(written)
