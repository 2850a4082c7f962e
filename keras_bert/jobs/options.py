"""`option`: a job dataclass field with what the command line shows for it."""

from __future__ import annotations

import dataclasses

# The names of keras_bert.text.rules.RULES, for `--rules` (not imported from there: the
# command line starts without TensorFlow; tests/cli/test_cli_text.py checks they agree).
RULES_NAMES = ("google", "huggingface")

# `--distribution` of `finetune` and `pretrain` (`keras_bert.training.distribution`; here so
# that the command line starts without importing Keras).
DISTRIBUTION_HELP = ("JAX: how training spreads over the visible devices (keras.distribution): "
                     "data_parallel (each batch split across all of them), model_parallel:N "
                     "(BERT's kernels sharded over N devices Megatron-style, batches over the "
                     "rest), auto (data_parallel when more than one device is visible) or "
                     "none; TensorFlow: auto or none")


# `--coordinator`, `--num-processes`, `--process-id`: `HostOptions`.
HOSTS_HELP = "JAX, many processes (keras.distribution.initialize): "


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


def with_fetched_checkpoint(job, field: str):
    """`job` with the hub id in its field `field` (`hf://...`, `kaggle://...`) fetched once
    (`keras_bert.checkpoints.hub_ids`) and replaced by the local copy's path (a path there
    names the commit it holds, so a resumed run compares the files it read); its precision
    note (what `auto` resolved to) kept."""
    from keras_bert.checkpoints.hub_ids import is_hub_id, local_checkpoint

    if not is_hub_id(getattr(job, field)):
        return job
    fetched = dataclasses.replace(job, **{field: local_checkpoint(getattr(job, field))})
    fetched.precision_note = job.precision_note
    return fetched


@dataclasses.dataclass
class HostOptions:
    """The settings that join this process to the others of a multi-process JAX run
    (`keras_bert.training.distribution.initialize_hosts`), shared by the jobs that train;
    keyword-only, after each job's own fields. Unset, each is read from Keras'
    `KERAS_DISTRIBUTION_*` variable; with none of them set the job runs alone."""

    coordinator: str | None = option(None, HOSTS_HELP + "process 0's HOST:PORT (a port free "
                                           "there; default $KERAS_DISTRIBUTION_JOB_ADDRESSES)",
                                     metavar="HOST:PORT", kw_only=True)
    num_processes: int | None = option(None, HOSTS_HELP + "how many processes train together "
                                             "(default $KERAS_DISTRIBUTION_NUM_PROCESSES)",
                                       metavar="N", kw_only=True)
    process_id: int | None = option(None, HOSTS_HELP + "this process's number, 0 (the one "
                                          "that writes checkpoints and the model) to N-1 "
                                          "(default $KERAS_DISTRIBUTION_PROCESS_ID)",
                                    metavar="I", kw_only=True)

    def join_hosts(self) -> None:
        """Joins the other processes when any host setting is given (before anything
        touches a device: the jobs call it first)."""
        from keras_bert.training.distribution import hosts_requested, initialize_hosts

        if hosts_requested(self.coordinator, self.num_processes, self.process_id):
            initialize_hosts(self.coordinator, self.num_processes, self.process_id)


# Not among the arguments a resumed run must repeat: a run resumes on another number of
# processes (the same updates), as on another number of devices.
HOST_FIELDS = tuple(field.name for field in dataclasses.fields(HostOptions))
