"""`keras-bert export MODEL_DIR BASE_DIR`: a versioned SavedModel for TensorFlow Serving."""

from __future__ import annotations

import json

from keras_bert.cli.options import add_rules_argument


def register(subparsers) -> None:
    """Adds the `export` subcommand."""
    from keras_bert.export.op_audit import DEFAULT_TARGET

    p = subparsers.add_parser(
        "export", help="export a model directory for TensorFlow Serving",
        description="Writes BASE_DIR/<version>/ (saved_model.pb, variables/, assets/, "
                    "assets.extra/tf_serving_warmup_requests) with the tokenizer inside: "
                    "serving_default takes raw strings, serve_ids takes token ids. The graph "
                    "is checked against the target model servers' ops before it appears. "
                    "Taggers return one label per word with byte offsets; span-QA models take "
                    "question and context and return answer, start, end and score. "
                    "With --hub, writes a TF Hub-style preprocess/ + encoder/ pair instead.")
    p.add_argument("model_dir", help="keras_bert model directory")
    p.add_argument("base_dir", help="model base directory (versions are subdirectories)")
    p.add_argument("--version", type=int, help="version number (default: the next free one)")
    p.add_argument("--seq-length", type=int,
                   help="static sequence length (TPU/XLA); default: pad to the longest text")
    p.add_argument("--max-length", type=int, help="truncation length when not static")
    p.add_argument("--precision", choices=("float32", "bfloat16", "float16"),
                   help="matmul precision of the served model (bfloat16: TPUs, Ampere+ GPUs, "
                        "CPUs with AMX; float16: older GPUs); softmax, LayerNorm statistics, "
                        "weights and outputs stay float32 (default: the precision the model "
                        "was trained and saved in, so the export answers as predict does)")
    p.add_argument("--xla", action="store_true",
                   help="run the network XLA-compiled over length buckets (every kind; TF "
                        "Serving needs --xla_cpu_compilation_enabled=true)")
    p.add_argument("--pooling", choices=("pooled", "cls", "mean"),
                   help="encoder exports: the `embedding` output")
    p.add_argument("--target", default=DEFAULT_TARGET,
                   help="model servers the graph must load in (see `keras-bert audit`)")
    p.add_argument("--null-score-threshold", type=float,
                   help="SQuAD v2.0 question answerers: answer \"\" when the null score beats "
                        "the best span by more than this (default 0)")
    p.add_argument("--no-audit", action="store_true", help="skip the op audit")
    add_rules_argument(p, "the rules the model was trained with (embedded in the export)")
    p.add_argument("--model-name", default="bert", help="model name in the warmup requests")
    p.add_argument("--format", choices=("saved_model", "litert"), default="saved_model",
                   help="saved_model (TF Serving) or litert: BASE_DIR/<version>/model.tflite "
                        "with the tokenizer, packing and outputs inside, for LiteRT with TF "
                        "Text's TFLite ops (classifiers, regressors, embedders)")
    p.add_argument("--quantize", choices=("none", "float16", "int8"), default="none",
                   help="litert: weights as float32 (none), float16, or int8 (dynamic "
                        "range); a SavedModel refuses it: --precision bfloat16 is its faster "
                        "form (bench/RESULTS.md)")
    p.add_argument("--litert-tokenizer", choices=("fast-bert", "none"),
                   help="litert: fast-bert puts TF Text's FastBertTokenizer in the file (text "
                        "in; it differs from Google's and Hugging Face's rules on some "
                        "strings, see docs/litert.md); none writes a file that takes token ids")
    p.add_argument("--hub", action="store_true",
                   help="write BASE_DIR/preprocess and BASE_DIR/encoder (TF Hub style)")
    p.set_defaults(run=run)


def run(args) -> int:
    """Exports and prints where the version went and its signatures."""
    if args.hub:
        _refuse_for_hub(args)
        from keras_bert.checkpoints import load_model_dir
        from keras_bert.export.hub_pair import export_hub_pair

        model_dir = load_model_dir(args.model_dir).with_rules(args.rules)
        paths = export_hub_pair(model_dir.load_encoder("float32"), model_dir.preprocessor(),
                                args.base_dir, default_seq_length=args.seq_length)
        if not args.no_audit:
            from keras_bert.export.op_audit import check

            for path in paths.values():
                check(path, args.target)
        print(json.dumps(paths, indent=2))
        return 0
    from keras_bert.tasks.task_dir import export_model

    if args.format == "litert":
        return _litert(args, export_model)
    if args.litert_tokenizer:
        raise ValueError("--litert-tokenizer is an option of --format litert")
    exported = export_model(args.model_dir, args.base_dir, version=args.version,
                            seq_length=args.seq_length, pooling=args.pooling,
                            max_length=args.max_length,
                            target=None if args.no_audit else args.target,
                            model_name=args.model_name,
                            null_score_threshold=args.null_score_threshold, rules=args.rules,
                            precision=args.precision, xla=args.xla, quantize=args.quantize)
    print(f"exported version {exported.version} ({exported.task}) to {exported.path}")
    print(json.dumps(exported.signatures, indent=2))
    return 0


def _given(options) -> list[str]:
    """The flags of `(flag, value, default)` given a value other than their default."""
    return [flag for flag, value, default in options if value not in (None, default)]


def _refuse_for_hub(args) -> None:
    """`--hub` writes float32 encoder pairs for any length: the options of the single export
    it would not apply are refused by name, never ignored."""
    given = _given([
        ("--version", args.version, None), ("--max-length", args.max_length, None),
        ("--precision", args.precision, "float32"), ("--xla", args.xla, False),
        ("--pooling", args.pooling, None),
        ("--null-score-threshold", args.null_score_threshold, None),
        ("--model-name", args.model_name, "bert"),
        ("--format", args.format, "saved_model"), ("--quantize", args.quantize, "none"),
        ("--litert-tokenizer", args.litert_tokenizer, None)])
    if given:
        raise ValueError(f"{', '.join(given)}: not an option of --hub (it writes float32 "
                         "preprocess/ and encoder/ SavedModels; --seq-length, --rules, "
                         "--target and --no-audit apply)")


def _litert(args, export_model) -> int:
    """`--format litert`: the options the SavedModel's alone takes (its static length, XLA,
    its warmup requests' model name, the op audit against model servers) are refused by
    name (`--hub` with it is refused by `_refuse_for_hub`, which runs first)."""
    from keras_bert.export.op_audit import DEFAULT_TARGET

    given = _given([
        ("--seq-length", args.seq_length, None), ("--xla", args.xla, False),
        ("--null-score-threshold", args.null_score_threshold, None),
        ("--model-name", args.model_name, "bert"), ("--target", args.target, DEFAULT_TARGET),
        ("--no-audit", args.no_audit, False)])
    if given:
        raise ValueError(f"{', '.join(given)}: not an option of --format litert")
    exported = export_model(args.model_dir, args.base_dir, format="litert",
                            version=args.version, max_length=args.max_length,
                            pooling=args.pooling, rules=args.rules, precision=args.precision,
                            quantize=args.quantize, tokenizer=args.litert_tokenizer)
    print(f"exported version {exported.version} ({exported.task}) to {exported.file}")
    print(json.dumps(exported.metadata["signatures"], indent=2))
    return 0
