"""`keras-bert quickstart [--quick] [--out DIR]`: the main job on its embedded defaults
(`keras_bert.jobs.quickstart`): pretrain, build a task, fine-tune, export, serve, query."""

from __future__ import annotations

from keras_bert.jobs import quickstart


def register(subparsers) -> None:
    """Adds the `quickstart` subcommand."""
    p = subparsers.add_parser(
        "quickstart", help="run the main job offline on the embedded defaults",
        description=quickstart.__doc__.splitlines()[0])
    quickstart.add_arguments(p)
    p.set_defaults(run=quickstart.run)
