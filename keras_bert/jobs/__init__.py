"""The command line's jobs, each a dataclass of its settings and a function that runs it over
the objects a Python user holds: `finetune` (a task model's `fit`, `evaluate`, `save`),
`pretrain`, `distill` and the quick start's main job (`quickstart`).

The job dataclasses import no TensorFlow at module level, so that the command line derives
its options from their fields (`keras_bert.cli.options.add_job_options`) and `--help`
stays fast."""
