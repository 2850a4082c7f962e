"""`TokenClassifier`: word lists (or strings) and per-word tags through fit, evaluate and
predict; the same weights as `keras-bert finetune --task tag`; the export answering what
`predict` answered (read as TF Serving reads it); round trips; bad input named.

Data: the tag rule of tests/jobs/test_finetune.py (cities `B-LOC`, a first name `B-PER`
and the surname after it `I-PER`, other words `O`) over its tiny vocabulary.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_bert import FitSchedule, TokenClassifier
from keras_bert.export.session_bundle import SessionBundle
from keras_bert.jobs.finetune import FinetuneJob, run_finetuning
from keras_bert.tasks.task_model import TextTaskModel
from tests.jobs.test_finetune import _iob2_spans, _tagged_sentence, _write_conll

TAGS = ["B-LOC", "B-PER", "I-PER", "O"]
SEQ = 24


def _data(seed: int, n: int) -> tuple[list[list[str]], list[list[str]]]:
    rng = np.random.default_rng(seed)
    rows = [_tagged_sentence(rng) for _ in range(n)]
    return [w for w, _ in rows], [t for _, t in rows]


def _fresh(model_dir, seed=7):
    keras.utils.set_random_seed(seed)
    tagger = TokenClassifier.from_pretrained(model_dir, labels=TAGS, seq_length=SEQ,
                                             precision="float32")
    tagger.compile(schedule=FitSchedule(learning_rate=5e-3))  # the CLI test's LEARN rate
    return tagger


@pytest.fixture(scope="module")
def trained(model_dir):
    tagger = _fresh(model_dir)
    words, tags = _data(1, 96)
    tagger.fit(words, tags, epochs=12, batch_size=16, seed=7, verbose=0)
    return tagger, _data(2, 24)


def _span_f1(gold, predicted) -> float:
    true = {(k, *s) for k, tags in enumerate(gold) for s in _iob2_spans(tags)}
    found = {(k, *s) for k, tags in enumerate(predicted) for s in _iob2_spans(tags)}
    correct = len(true & found)
    if not correct:
        return 0.0
    precision, recall = correct / len(found), correct / len(true)
    return 2 * precision * recall / (precision + recall)


def test_fit_learns_the_tags_and_shuffled_tags_do_not(trained, model_dir):
    tagger, (words, tags) = trained
    answers = tagger.predict([" ".join(w) for w in words])  # strings split on whitespace
    predicted = [list(row[:n]) for row, n in zip(answers["labels"], answers["num_words"],
                                                 strict=True)]
    assert [list(row[:n]) for row, n in zip(answers["tokens"], answers["num_words"],
                                            strict=True)] == words
    f1 = _span_f1(tags, predicted)
    assert tagger.evaluate(words, tags)["f1"] == pytest.approx(f1, abs=1e-9)
    # Measured over the starting models of seeds 0-4 (tests/conftest.py: model_dir): F1 1.0
    # each; tags shuffled within sentences 0.28-0.35.
    assert f1 >= 0.8
    control = _fresh(model_dir)
    train_words, train_tags = _data(1, 96)
    rng = np.random.default_rng(0)
    shuffled = [list(rng.permutation(t)) for t in train_tags]  # tags moved within sentences
    control.fit(train_words, shuffled, epochs=12, batch_size=16, seed=7, verbose=0)
    assert control.evaluate(words, tags)["f1"] <= 0.6


def test_fit_ends_with_the_weights_of_keras_bert_finetune(trained, model_dir, tmp_path):
    # The command repeats `trained`'s fit (its data, rate, epochs and seed), so that the
    # Python side is the module's model rather than a fit of its own.
    words, tags = _data(1, 96)
    train = _write_conll(tmp_path / "train.conll", list(zip(words, tags, strict=True)))
    run_finetuning(FinetuneJob(task="tag", model=model_dir, train=train,
                               out=str(tmp_path / "cli"), seq_length=SEQ, epochs=12,
                               batch_size=16, learning_rate=5e-3, precision="float32",
                               seed=7, verbose=0))
    cli = TextTaskModel.load(str(tmp_path / "cli" / "model")).network
    tagger = trained[0]
    assert len(tagger.network.weights) == len(cli.weights) > 30
    for a, b in zip(tagger.network.weights, cli.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)


# 5.4 s on a 2-core Zen 4 (an export and a Session load): slow. In the README's tier the
# export path is guarded by the classifier's test_export_answers_what_predict_answered and
# the tagger's export by tests/export/test_task_exports.py (its words against the Keras
# model's, in a fresh process).
@pytest.mark.slow
def test_export_answers_what_predict_answered(trained, tmp_path):
    tagger, (words, _) = trained
    probe = [" ".join(w) for w in words[:5]] + ["", "ahab smith sailed to paris " * 12]
    want = tagger.predict(probe)  # the last one needs several windows of 24
    with SessionBundle(tagger.export(str(tmp_path / "served"))) as bundle:
        got = bundle.run("serving_default", {"text": np.array(probe, dtype=object)})
    for name in ("labels", "tokens"):
        assert [[v.decode() for v in row] for row in got[name]] == want[name].tolist()
    for name in ("label_ids", "num_words", "start_offsets", "end_offsets"):
        np.testing.assert_array_equal(got[name], want[name])
    np.testing.assert_allclose(got["scores"], want["scores"], rtol=0, atol=1e-5)
    assert want["num_words"][-1] == 60


# 4.2 s on a 2-core Zen 4 (three loads, each tracing `predict`): slow. In the README's
# tier: tests/tasks/test_task_networks.py::test_task_model_directory_round_trip[tag] (the
# directory, the `.keras` file and the task block) and the classifier's round trip of the
# same `TextTaskModel` code, answers compared.
@pytest.mark.slow
def test_model_directory_and_keras_file_round_trips(trained, tmp_path):
    tagger, (words, _) = trained
    want = tagger.predict(words)
    path = tagger.save(str(tmp_path / "model"))
    tagger.save(str(tmp_path / "tagger.keras"))
    for loaded in (TokenClassifier.load(path), TokenClassifier.from_pretrained(path),
                   keras.saving.load_model(str(tmp_path / "tagger.keras"))):
        assert isinstance(loaded, TokenClassifier) and loaded.labels.names == TAGS
        assert loaded._task_block()["doc_stride"] == SEQ // 2
        got = loaded.predict(words)
        assert got["labels"].tolist() == want["labels"].tolist()
        np.testing.assert_allclose(got["scores"], want["scores"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("x, y, error, match", [
    ([["ahab", "sailed"]], [["B-PER"]], ValueError, r"1 tags for the 2 words"),
    ([["ahab"]], [["B-MISC"]], ValueError, r"'B-MISC', which is not one of the model's"),
    ([["ahab smith"]], [["B-PER"]], ValueError, "holds no whitespace"),
    ([["ahab"]], ["B-PER"], TypeError, "one list of tags per sentence"),
    ("ahab sailed", [["B-PER", "O"]], TypeError, "single string"),
    ([["ahab"], ["rome"]], [["B-PER"]], ValueError, "1 tag lists for 2 sentences"),
])
def test_bad_input_gets_one_clear_error(trained, x, y, error, match):
    tagger, _ = trained
    with pytest.raises(error, match=match):
        tagger.evaluate(x, y)
