"""`TaskHooks`: what a task kind implements for `TextTaskModel`, listed once (the class
docstring), the "must" hooks abstract and the "may" hooks with their defaults."""

from __future__ import annotations

import abc


class TaskHooks(abc.ABC):
    """The hooks of a task kind (`keras_bert/tasks/<kind>/model.py`).

    `TextTaskModel`'s methods call them, and so may the modules of `keras_bert.tasks`;
    nothing outside that package does (`tests/test_public_api.py`): the job layer, the
    exporters and the command line call the public methods (`TextTaskModel`'s docstring).

    Must (abstract: a kind that lacks one cannot be built):

    - `_build_network(encoder, config, labels)` (classmethod): the kind's network, an
      untrained head around `encoder`;
    - `_default_loss()`: `(loss, metrics)` that `compile` uses where none are given;
    - `_rows(x, y)`: the rows of inputs `x` carrying targets `y`;
    - `_stream(rows, batch_size, seed, drop_remainder, batching)`: their training batches;
    - `_score(rows, batch_size, train)`: the task metrics on rows;
    - `_requests(x)`: the `serving_default` inputs for `x`;
    - `_build_serving(preprocessor, options)`: the export's functions.

    May (the defaults below; a kind overrides what differs):

    - `_from_settings(settings, train, train_file)` (classmethod) and
      `_read_rows(path, columns, labels)` (classmethod): what `keras-bert finetune` builds
      and reads (default: the kind is not fine-tuned by it, as the embedder is not);
    - `_tune_on(evaluation)`: what the kind keeps of an evaluation (default: nothing);
    - `_answers(source, batch_size, text_column, text_b_column)`: `keras-bert predict`'s
      answers for a file (default: refused, as for the embedder, which `encode` reads).

    A kind may also extend a public method, calling `super()`, as a Keras model extends
    `fit` (`MultiLabelClassifier` extends `fit` and `fit_rows`).
    """

    @classmethod
    @abc.abstractmethod
    def _build_network(cls, encoder, config, labels):
        """The kind's network (an untrained head) around `encoder`."""

    @abc.abstractmethod
    def _default_loss(self) -> tuple:
        """`(loss, metrics)` this kind trains with (loss None: the model computes its own)."""

    @abc.abstractmethod
    def _rows(self, x, y) -> list:
        """The rows of inputs `x` carrying targets `y` (validated), as the kind's file
        reader gives them (`TextExample`, `TaggedSentence`, `SquadExample`, ...)."""

    @abc.abstractmethod
    def _stream(self, rows: list, batch_size: int, seed: int | None = None,
                drop_remainder: bool = False, batching=None) -> tuple:
        """`(dataset, examples)`: `(features, targets)` batches of `rows` (with `seed`:
        endless epochs, each shuffled by `(seed, epoch)`; else one pass in order), each
        shaped by `batching` (a `Batching`: `keras_bert.tasks.batches.examples_dataset`),
        and the number of training examples they hold (windows, for windowed kinds)."""

    @abc.abstractmethod
    def _score(self, rows: list, batch_size: int, train: list | None = None) -> dict:
        """The task metrics on `rows` (`train`: the training rows, for the baselines of
        kinds that report them)."""

    @abc.abstractmethod
    def _requests(self, x) -> dict[str, list[str]]:
        """The `serving_default` inputs for `x`."""

    @abc.abstractmethod
    def _build_serving(self, preprocessor, options=None):
        """The kind's `ServingModule` around `preprocessor`; `options`: the kind's export
        options (None, or its class's `export_options_class`, checked by
        `serving_functions`: `tasks/export_options.py`)."""

    @classmethod
    def _from_settings(cls, settings, train: list, train_file: str):
        """The untrained model `keras-bert finetune` fits: a new head built with `settings`
        (a `keras_bert.tasks.settings.TaskSettings`), sized for the training rows `train`
        read from `train_file`."""
        raise NotImplementedError(f"{cls.__name__} is not fine-tuned by `keras-bert finetune`")

    @classmethod
    def _read_rows(cls, path: str, columns, labels=None) -> list:
        """The rows of the training or evaluation file `path` in `columns` (a
        `keras_bert.tasks.settings.Columns`); with `labels`, a row with another label is an
        error naming the file."""
        raise NotImplementedError(f"{cls.__name__} is not fine-tuned by `keras-bert finetune`")

    def _tune_on(self, evaluation: dict | None) -> None:
        """Keeps what the kind chooses on an evaluation (the multi-label thresholds)."""
        return None  # the default: most kinds choose nothing on an evaluation

    def _answers(self, source: str, batch_size: int, text_column: str | None = None,
                 text_b_column: str | None = None) -> list:
        """One JSON-ready answer per row of the file `source` (or `-`, stdin), computed by
        the export's `serving_default` function in this process."""
        raise ValueError(f"`keras-bert predict` answers for fine-tuned models; a "
                         f"{type(self).__name__} is read by `keras-bert encode`")
