"""Command-line options that several subcommands share."""

from __future__ import annotations

import argparse

from keras_bert.jobs.options import RULES_NAMES


def add_rules_argument(p, default_source: str = "the model's own") -> None:
    """`--rules google|huggingface`: the tokenizer rules (`keras_bert.text.rules`)."""
    p.add_argument("--rules", choices=RULES_NAMES, default=None,
                   help="tokenizer rules: google (Google's tokenization.py: drops control "
                        "and format characters, [UNK] over 200 characters) or huggingface "
                        "(Hugging Face's tokenizers: also drops private-use characters, "
                        f"[UNK] over 100); default: {default_source}")


def add_job_options(p, job_class, skip: tuple[str, ...] = ()) -> None:
    """One option per field of the job dataclass `job_class` (`--text-b-column` for
    `text_b_column`): its type, default, choices and help come from the field itself
    (`keras_bert.jobs.options.option`), so a job's setting has one home. A field without a
    default is a required option; `skip` names the fields set another way."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(job_class)
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    # Keyword-only fields (shared ones a job inherits, as `HostOptions`) after its own.
    for field in sorted(dataclasses.fields(job_class), key=lambda f: f.kw_only is True):
        meta = field.metadata
        if not field.init or field.name in skip or meta.get("cli") is False:
            continue
        target = p
        if meta.get("group"):
            if meta["group"] not in groups:
                groups[meta["group"]] = p.add_mutually_exclusive_group()
            target = groups[meta["group"]]
        target.add_argument(meta.get("flag") or "--" + field.name.replace("_", "-"),
                            **_argument(field, _base_type(hints[field.name])))


def _argument(field, kind) -> dict:
    """The `add_argument` keywords of one job field."""
    import dataclasses

    meta = field.metadata
    argument = dict(help=meta.get("help"), dest=field.name)
    if field.default is dataclasses.MISSING:
        argument["required"] = True
    else:
        argument["default"] = field.default
    if kind is bool:
        action = "store_false" if field.default is True and meta.get("flag") else (
            "store_true" if field.default is False else argparse.BooleanOptionalAction)
        return {**argument, "action": action}
    if typing_list(kind):
        kind = str
    for name in ("choices", "nargs", "metavar"):
        if meta.get(name):
            argument[name] = meta[name]
    return {**argument, "type": kind}


def typing_list(kind) -> bool:
    """Whether an annotation is a list (`list[str]`: the items are `str`)."""
    import typing

    return kind is list or typing.get_origin(kind) is list


def job_from_args(job_class, args, **settings):
    """`job_class` built from the parsed options `add_job_options` added (and `settings`,
    the fields set another way)."""
    import dataclasses

    for field in dataclasses.fields(job_class):
        if field.init and field.name not in settings and hasattr(args, field.name):
            settings[field.name] = getattr(args, field.name)
    return job_class(**settings)


def _base_type(annotation):
    """`int` of `int | None`, and so on: the type an option's value converts to."""
    import types
    import typing

    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return annotation
