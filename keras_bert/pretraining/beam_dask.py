"""The pipeline's steps for Beam's DaskRunner (`--runner dask`), which runs a Beam pipeline as
`dask.bag` operations on a `dask.distributed` cluster.

Three things the other runners do are not done there (Beam 2.77), so the DaskRunner gets
steps that need none of them and write the same examples:

- **Outputs of `finish_bundle` are dropped** (the runner collects a task's outputs before it
  calls `finish_bundle`). `BatchElements` and `Top.Smallest` emit there, so documents are
  read in batches per file, and the random-next pool is a per-key top then a global one
  (`CombinePerKey`, which the runner runs as a `GroupByKey` and a `ParDo`).
- **A side input is computed again in every task that reads it.** The pool reaches the
  documents through a `CoGroupByKey` instead: it is copied to each of `POOL_BUCKETS` buckets
  (at most one per input file) and the documents are spread over them by their key.
- **Beam's file writes go wrong over more than one Dask partition**: the temporary folder is
  a side input named by a fresh uuid, computed again by each task that reads it, so the
  tasks disagree on where the files are (seen with `WriteToText`: the finalize step finds no
  file to rename). The examples are grouped by shard
  (a hash of the record) and each shard is written whole by one task, its records in the
  order of that hash, under a temporary name renamed when complete.

The runner reports no Beam metrics, so `run_pipeline` returns no counts for it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

POOL_BUCKETS = 32  # the pool is copied once per bucket: the join's parallelism, at a cost
BATCH = 256  # documents per tokenizer call, as `BatchElements`' largest batch elsewhere


def dask_args(address: str | None, timeout: int) -> list[str]:
    """The DaskRunner's options for the scheduler at `address`, once it has answered within
    `timeout` seconds; none for no address (the runner starts a `LocalCluster` here)."""
    try:
        from distributed import Client
    except ImportError:
        raise ImportError("--runner dask needs dask and distributed: pip install "
                          "'keras-bert-tf[dask]'") from None
    if address is None:
        return []
    try:
        with Client(address, timeout=timeout, set_as_default=False):
            pass
    except OSError as e:
        raise ConnectionError(f"no Dask scheduler answered at {address} within "
                              f"{timeout} s") from e
    return [f"--dask_client_address={address}", f"--dask_connection_timeout={timeout}"]


def read_file_batches(path: str, read_documents, fmt: str, text_field: str,
                      size: int = BATCH):
    """The documents of one corpus file, as `read_documents(path, fmt, text_field)` reads
    them (the pipeline's reader: passed in, so that this module does not import the
    pipeline that imports it), in lists of up to `size`."""
    batch = []
    for document in read_documents(path, fmt, text_field):
        batch.append(document)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def random_next_pool(beam, documents, pool_size: int, buckets: int):
    """The `pool_size` `(key, document)` pairs of smallest key, as one list."""
    from apache_beam.transforms.combiners import Top, TopCombineFn

    smallest = TopCombineFn(pool_size, key=_key, reverse=True)
    return (documents
            | "PoolBucket" >> beam.Map(lambda e: (e[0] % buckets, e))
            | "PoolPerBucket" >> Top.PerKey(pool_size, key=_key, reverse=True)
            | "PoolCandidates" >> beam.FlatMap(lambda kv: kv[1])
            | "Pool" >> beam.CombineGlobally(smallest).without_defaults())


def _key(entry):
    return entry[0]


def join_pool(beam, documents, pool, buckets: int):
    """`(bucket, {"documents": [(key, document), ...], "pool": [pool]})` per bucket."""
    keyed = documents | "DocumentBucket" >> beam.Map(lambda e: (e[0] % buckets, e))
    copies = pool | "PoolCopies" >> beam.FlatMap(lambda p: ((b, p) for b in range(buckets)))
    return {"documents": keyed, "pool": copies} | "JoinPool" >> beam.CoGroupByKey()


def joined_examples(make_examples):
    """A DoFn making the examples of a joined bucket with `make_examples` (the class of
    `beam_pipeline`'s DoFn, which takes the pool as a side input)."""

    class MakeJoinedExamples(make_examples):
        """`(bucket, {"documents": ..., "pool": [pool]})` -> serialized examples."""

        def process(self, element):
            _, joined = element
            pools = list(joined["pool"])
            if not pools:  # no document at all: no pool was made
                return
            for document in joined["documents"]:
                yield from super().process(document, pools[0])

    return MakeJoinedExamples


def write_shards(beam, examples, paths: Sequence[str]):
    """Writes the serialized `examples` to `paths`, each shard by one task; every shard is
    written, empty if no example falls in it."""
    shards = len(paths)
    every = (examples.pipeline | "Shards" >> beam.Create(range(shards))
             | "EmptyShards" >> beam.Map(lambda s: (s, None)))
    keyed = examples | "ShardOf" >> beam.Map(lambda r: (_shard(r, shards), r))
    return ((keyed, every) | "AllShards" >> beam.Flatten()
            | "GroupShards" >> beam.GroupByKey()
            | "WriteShards" >> beam.Map(_write_shard, paths))


def _digest(record: bytes) -> bytes:
    """A record's shard and its place in it: the same on every worker (unlike `hash`)."""
    return hashlib.blake2b(record, digest_size=8).digest()


def _shard(record: bytes, shards: int) -> int:
    return int.from_bytes(_digest(record), "big") % shards


def _write_shard(element, paths: Sequence[str]) -> str:
    import tensorflow as tf

    shard, records = element
    path = paths[shard]
    with tf.io.TFRecordWriter(path + ".incomplete") as writer:
        for record in sorted((r for r in records if r is not None), key=_digest):
            writer.write(record)
    tf.io.gfile.rename(path + ".incomplete", path, overwrite=True)
    return path
