"""`keras-bert serve BASE_DIR`: a development server speaking TF Serving's gRPC and REST APIs."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading


def register(subparsers) -> None:
    """Adds the `serve` subcommand."""
    p = subparsers.add_parser(
        "serve", help="serve exports over TF Serving's gRPC and REST APIs (development)",
        description="Serves the highest version under BASE_DIR (BASE_DIR/<N>/, as written by "
                    "`keras-bert export`) with TensorFlow Serving's protocols: gRPC "
                    "PredictionService (Predict, GetModelMetadata) and ModelService "
                    "(GetModelStatus), and the REST API /v1/models/NAME[...]. Each version "
                    "is loaded as TF Serving loads it (Session, SaverDef restore, "
                    "signature_def tensors, TF Text kernels only), so only what TF Serving "
                    "can serve is served. New versions "
                    "are picked up while running (each one's warmup requests replay before it "
                    "becomes AVAILABLE) and the old one is unloaded. For production use the "
                    "official tensorflow/serving images (export/README.md).")
    p.add_argument("base_dir", help="model base directory (versions are subdirectories)")
    p.add_argument("--model-name", default="bert", help="the model's name (default bert)")
    p.add_argument("--grpc-port", type=int, default=8500,
                   help="gRPC port (default 8500; 0 picks a free port)")
    p.add_argument("--rest-port", type=int, default=8501,
                   help="REST port (default 8501; 0 picks a free port)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--poll-seconds", type=float, default=2.0,
                   help="how often BASE_DIR is scanned for new versions (default 2)")
    p.add_argument("--no-warmup", action="store_true",
                   help="do not replay assets.extra/tf_serving_warmup_requests on load")
    p.add_argument("--max-message-mb", type=float, default=64.0,
                   help="largest request (gRPC message / REST body) in MiB (default 64)")
    p.add_argument("--max-string-kb", type=float, default=1024.0,
                   help="largest string in a request, in KiB (default 1024)")
    p.add_argument("--max-request-rows", type=int, default=256,
                   help="most rows (texts) in one request (default 256)")
    p.add_argument("--max-concurrent-calls", type=int, default=4,
                   help="model calls running at once; other requests wait (default 4)")
    p.add_argument("--workers", type=int, default=16, help="gRPC worker threads (default 16)")
    p.add_argument("--no-batching", action="store_true",
                   help="run every request alone (default: merge concurrent requests)")
    p.add_argument("--max-batch-size", type=int, default=32,
                   help="most texts per merged call (default 32)")
    p.add_argument("--batch-timeout-ms", type=float, default=0.0,
                   help="how long a batch waits for more requests (default 0: take what is "
                        "queued, no added latency)")
    p.add_argument("--batch-threads", type=int, default=1,
                   help="threads running merged calls (default 1)")
    p.add_argument("--intra-op-threads", type=int, default=0,
                   help="threads one op splits over, as TF Serving's "
                        "--tensorflow_intra_op_parallelism (default 0: TensorFlow's, every "
                        "core). 1 with --no-batching (or --batch-threads as many as cores) "
                        "answered concurrent clients faster on 2 cores; with merged calls on "
                        "one batch thread it leaves one core working (docs/export-and-serve.md)")
    p.add_argument("--inter-op-threads", type=int, default=0,
                   help="threads running ops side by side, as TF Serving's "
                        "--tensorflow_inter_op_parallelism (default 0: TensorFlow's)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    p.set_defaults(run=run)


def run(args) -> int:
    """Starts the server, prints its URLs, and serves until SIGINT or SIGTERM."""
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from keras_bert.serving_api import serving_apis

    serving_apis("keras-bert serve", "model_pb2")  # the server speaks TF Serving's protos
    from keras_bert.devserver.server import ModelServer

    if not os.path.isdir(args.base_dir):
        raise FileNotFoundError(f"{args.base_dir} is not a directory (export with "
                                f"`keras-bert export MODEL_DIR {args.base_dir}`)")
    server = ModelServer(args.base_dir, args.model_name, host=args.host,
                         grpc_port=args.grpc_port, rest_port=args.rest_port,
                         poll_seconds=args.poll_seconds, warmup=not args.no_warmup,
                         max_message_bytes=int(args.max_message_mb * (1 << 20)),
                         max_string_bytes=int(args.max_string_kb * 1024), workers=args.workers,
                         batching=not args.no_batching, max_batch_size=args.max_batch_size,
                         batch_timeout_s=args.batch_timeout_ms / 1000,
                         batch_threads=args.batch_threads, max_rows=args.max_request_rows,
                         max_concurrent_calls=args.max_concurrent_calls,
                         intra_op_threads=args.intra_op_threads,
                         inter_op_threads=args.inter_op_threads)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except OSError as e:
            print(f"keras-bert serve: error: {e}", file=sys.stderr)
            return 2
        current = server.store.current
        name = args.model_name
        print(f"serving model '{name}' from {server.store.base_dir} "
              f"(version {current.version if current else 'none yet'})")
        print(f"gRPC  {server.grpc_address}  (PredictionService, ModelService)")
        print(f"REST  {server.rest_url}/v1/models/{name}  (:predict, /metadata)")
        print("Ctrl-C or SIGTERM stops the server.", flush=True)
        while not stop.wait(0.5):
            pass
        print("stopping...", flush=True)
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
