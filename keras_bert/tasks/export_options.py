"""A kind's export options: what its export takes besides every export's options
(`pooling` an embedder's, `null_score_threshold` a question answerer's), as one typed
object of its own: a frozen dataclass in its folder, its class's `export_options_class`.

The flags by name (`keras-bert export --pooling`, `model.export(..., pooling=...)`) become
that object here, through the kind's class (`build_options`); the exporters
(`keras_bert.export.exporter`, `keras_bert.export.litert`) take it as `task_options` and
hand it to the model's `serving_functions` without reading it, so that they name no kind's
option.
"""

from __future__ import annotations

import dataclasses


def build_options(model_class: type, flags: dict):
    """The export options of `model_class`'s kind from `flags` (name -> value; None: not
    given): its `export_options_class` with those given, or None for a kind whose export
    takes none; a `ValueError` naming the flags its export does not take."""
    given = {name: value for name, value in flags.items() if value is not None}
    options_class = model_class.export_options_class
    fields = set() if options_class is None else {
        field.name for field in dataclasses.fields(options_class)}
    other = sorted(set(given) - fields)
    if other:
        raise ValueError(f"{', '.join(other)}: not an option of a {model_class.__name__}'s "
                         "export")
    return None if options_class is None else options_class(**given)


def checked_options(model_class: type, options):
    """`options` when `model_class`'s export takes them (None, or its
    `export_options_class`); a `ValueError` otherwise."""
    options_class = model_class.export_options_class
    if options is None or (options_class is not None and isinstance(options, options_class)):
        return options
    raise ValueError(f"{type(options).__name__}: not the export options of a "
                     f"{model_class.__name__} (it takes "
                     f"{'none' if options_class is None else options_class.__name__})")


def exporter_options(model, options: dict) -> dict:
    """`options` (of `model.export`, `task_dir.export_model`) as the exporter takes them
    (`keras_bert.export.exporter.write_export`): its own as they are, the others (the kind's
    flags, by name) as the kind's typed `task_options` (`build_options`)."""
    from keras_bert.export.exporter import EXPORT_OPTIONS

    own = {name: value for name, value in options.items() if name in EXPORT_OPTIONS}
    flags = {name: value for name, value in options.items() if name not in EXPORT_OPTIONS}
    if flags:
        if own.get("task_options") is not None:
            raise ValueError(f"{', '.join(sorted(flags))}: given with task_options; give the "
                             "kind's options one way")
        own["task_options"] = build_options(type(model), flags)
    return own
