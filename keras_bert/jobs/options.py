"""`option`: a job dataclass field with what the command line shows for it."""

from __future__ import annotations

import dataclasses


def option(default=dataclasses.MISSING, help: str | None = None, choices=None,
           cli: bool = True, flag: str | None = None, nargs: str | None = None,
           metavar: str | None = None, group: str | None = None, **kwargs):
    """A dataclass field with its command-line `help` and `choices` (`cli=False`: not an
    option). `keras_bert.cli.options.add_job_options` turns each into one option: `--name`
    of the field, or `flag` (a flag for a field that defaults to True sets it False, as
    `--cased` does `lower_case`); `nargs` and `metavar` as argparse takes them; fields of
    one `group` exclude each other."""
    meta = {"help": help, "choices": choices, "cli": cli, "flag": flag, "nargs": nargs,
            "metavar": metavar, "group": group}
    return dataclasses.field(default=default, metadata=meta, **kwargs)
