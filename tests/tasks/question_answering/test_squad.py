"""SQuAD reading, and the Python reference of the windowed features (original run_squad.py
rules) and answer decoding (`tests/tasks/question_answering/reference_squad.py`).

Generated data (no SQuAD set is installed):
  * long context: the sentences "Fact {i}: the whale number {i} is {colour}." for i = 1..40,
    colour = COLOURS[i % 4], joined by single spaces. Each sentence is exactly 10 wordpieces
    (fact, i, :, the, whale, number, i, is, colour, .), so the context is 400 tokens and
    sentence i occupies tokens 10(i-1) .. 10(i-1)+9 ("whale" at +4, the colour at +8).
    The question "What colour is whale number 17?" is 7 wordpieces.
  * accented / CJK context: "Le fait {i} concerne Zoë à Pékin 北京 ; vrai." (16 wordpieces:
    le fai ##t i concern ##e zoe a pe ##kin 北 京 ; vr ##ai .).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from keras_bert.tasks.question_answering.metrics import squad_em_f1
from keras_bert.tasks.question_answering.squad import (
    SquadAnswer,
    SquadExample,
    parse_squad,
    read_squad,
)
from keras_bert.text import BertTokenizer
from tests.support.reference import minilm_dir
from tests.tasks.question_answering.reference_squad import (
    byte_to_char_offsets,
    decode_predictions,
    doc_windows,
    max_context_windows,
    predicted_texts,
    squad_dataset,
    squad_features,
)

COLOURS = ["grey", "white", "blue", "black"]
LONG = " ".join(f"Fact {i}: the whale number {i} is {COLOURS[i % 4]}." for i in range(1, 41))
FRENCH = " ".join(f"Le fait {i} concerne Zoë à Pékin 北京 ; vrai." for i in range(1, 31))


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(os.path.join(minilm_dir(), "vocab.txt"))


def _squad_json(context, qas):
    return {"version": "test", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": qas}]}]}


def test_read_v11_and_v20(tmp_path):
    context = "Call me Ishmael. Some years ago..."
    data = _squad_json(context, [
        {"id": "a", "question": "Who?", "answers": [{"text": "Ishmael", "answer_start": 8},
                                                    {"text": "me Ishmael", "answer_start": 5}]},
        {"id": "b", "question": "When?", "answers": [], "is_impossible": True,
         "plausible_answers": [{"text": "years ago", "answer_start": 22}]}])
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    a, b = read_squad(path)
    assert a == SquadExample("a", "Who?", context, (SquadAnswer("Ishmael", 8),
                                                    SquadAnswer("me Ishmael", 5)), False, "t")
    assert b.is_impossible and b.answers == ()


@pytest.mark.parametrize("qa, message", [
    ({"id": "q1", "question": "?", "answers": [{"text": "whale", "answer_start": 20}]},
     r"question 'q1': answer 0 'whale': answer span outside the context"),
    ({"id": "q2", "question": "?", "answers": [{"text": "whale", "answer_start": 0}]},
     r"question 'q2': answer 0: mismatch between the answer text 'whale' and the context "
     r"at answer_start=0 \('A whi'\)"),
    ({"id": "q3", "answers": []}, r"question 'q3' has no 'question' text"),
    ({"id": "q4", "question": "?", "answers": [{"text": "whale"}]},
     r"question 'q4': answer 0 needs 'text' and 'answer_start'"),
])
def test_bad_answers_name_the_question(qa, message):
    with pytest.raises(ValueError, match=message):
        parse_squad(_squad_json("A white whale.", [qa]))


def test_repeated_id():
    qa = {"id": "dup", "question": "?", "answers": []}
    with pytest.raises(ValueError, match="question id 'dup' is repeated"):
        parse_squad(_squad_json("x", [qa, qa]))


def test_byte_to_char_offsets(tokenizer):
    text = "Zoë 北京"  # bytes: Z0 o1 ë2-3 ' '4 北5-7 京8-10 ; chars: Z0 o1 ë2 ' '3 北4 京5
    ids, starts, ends = tokenizer.tokenize_with_offsets([text])
    assert starts.to_list() == [[0, 5, 8]] and ends.to_list() == [[4, 8, 11]]
    char_starts, char_ends = byte_to_char_offsets(text, starts[0], ends[0])
    assert char_starts.tolist() == [0, 4, 5] and char_ends.tolist() == [3, 5, 6]
    # a byte offset inside a character covers that character
    assert byte_to_char_offsets(text, [3], [6])[0].tolist() == [2]
    assert byte_to_char_offsets(text, [3], [6])[1].tolist() == [5]


def test_doc_windows_and_max_context():
    # 400 tokens, 54 per window, step 20: starts 0, 20, ..., 360 (360 + 54 >= 400 -> last,
    # length 40) = 19 windows
    windows = doc_windows(400, 54, 20)
    assert len(windows) == 19 and windows[0] == (0, 54) and windows[-1] == (360, 40)
    assert doc_windows(10, 54, 20) == [(0, 10)] and doc_windows(0, 5, 2) == [(0, 0)]
    # token 164 is in windows starting 120 (score min(44, 9) + 0.54 = 9.54), 140 (min(24,
    # 29) = 24.54) and 160 (min(4, 49) = 4.54) -> window 7 (start 140)
    best = max_context_windows(windows, 400)
    assert best[164] == 7
    # a tie (same left/right context, same length) goes to the first window
    assert max_context_windows([(0, 4), (2, 4)], 6).tolist() == [0, 0, 0, 1, 1, 1]


def test_long_context_windows(tokenizer):
    start = LONG.index("whale number 17 is")
    answer = "whale number 17 is white"  # COLOURS[17 % 4] = COLOURS[1]
    assert LONG[start:start + len(answer)] == answer
    ex = SquadExample("q17", "What colour is whale number 17?", LONG,
                      (SquadAnswer(answer, start),))
    features = squad_features([ex], tokenizer, seq_length=64, max_query_length=16,
                              doc_stride=20)
    # 7 question tokens -> 64 - 7 - 3 = 54 context tokens per window -> 19 windows
    assert len(features) == 19
    f0 = features[0]
    assert f0.input_mask.sum() == 64 and f0.input_type_ids.tolist() == [0] * 9 + [1] * 55
    # answer tokens 164 ("whale") .. 168 ("white"): inside windows starting 120, 140, 160
    # (numbers 6, 7, 8) at 9 + (164 - start) .. 9 + (168 - start); 9 = [CLS] + 7 + [SEP]
    labelled = {f.window_index: (f.start_position, f.end_position)
                for f in features if f.start_position}
    assert labelled == {6: (53, 57), 7: (33, 37), 8: (13, 17)}
    # every context token is "max context" in exactly one window, and the offsets of each
    # window map its tokens back to the context
    assert sum(int(f.token_is_max_context.sum()) for f in features) == 400
    f7 = features[7]
    text = LONG[f7.token_start_char[33]:f7.token_end_char[37]]
    assert text == answer
    ds = squad_dataset(features, batch_size=8, training=True)
    inputs, targets = next(iter(ds))
    assert inputs["input_word_ids"].shape == (8, 64)
    assert targets["start_positions"].numpy()[6] == 53


def _peaked_logits(features, peaks, seq_length):
    """Zero logits with `peaks[(feature index)] = (start, end, value)` set."""
    start = np.zeros((len(features), seq_length))
    end = np.zeros((len(features), seq_length))
    for i, (s, e, value) in peaks.items():
        start[i, s] = value
        end[i, e] = value
    return start, end


def test_decode_across_windows(tokenizer):
    ex = SquadExample("q17", "What colour is whale number 17?", LONG)
    features = squad_features([ex], tokenizer, seq_length=64, max_query_length=16,
                              doc_stride=20)
    # peaks on "whale .. white" of fact 17 in windows 6, 7, 8 (positions as above); window
    # 6's is the highest but token 164 is not max context there, so window 7's wins
    start, end = _peaked_logits(features, {6: (53, 57, 9.0), 7: (33, 37, 5.0),
                                           8: (13, 17, 5.0)}, 64)
    result = decode_predictions([ex], features, start, end)["q17"]
    answer_start = LONG.index("whale number 17 is")
    assert result["text"] == "whale number 17 is white"
    assert (result["start_char"], result["end_char"]) == (answer_start, answer_start + 24)
    assert result["score"] == 10.0  # 5 + 5 from window 7
    assert result["null_score"] is None
    texts = [c["text"] for c in result["nbest"]]
    assert len(texts) == len(set(texts)) <= 20
    assert sum(c["probability"] for c in result["nbest"]) == pytest.approx(1.0)
    # spans longer than max_answer_length are dropped: the 5-token span needs >= 5
    short = decode_predictions([ex], features, start, end, max_answer_length=4)["q17"]
    assert short["text"] != "whale number 17 is white"
    # (a word of LONG is one or more wordpieces: at most 4 tokens means at most 4 words)
    assert short["nbest"] and all(len(c["text"].split()) <= 4 for c in short["nbest"])


def test_decode_non_ascii_exact_substring(tokenizer):
    # fact 17 starts at token 16 * 16 = 256; "zoe a pe ##kin 北 京" are its tokens +6..+11,
    # i.e. 262..267
    start_char = FRENCH.index("Le fait 17 ") + len("Le fait 17 concerne ")
    answer = "Zoë à Pékin 北京"  # 14 characters (Z o ë _ à _ P é k i n _ 北 京), 20 bytes
    assert FRENCH[start_char:start_char + len(answer)] == answer
    ex = SquadExample("fr", "Où est Zoë ?", FRENCH, (SquadAnswer(answer, start_char),))
    features = squad_features([ex], tokenizer, seq_length=48, max_query_length=16,
                              doc_stride=12)
    # question "ou est zoe ?" = 4 tokens -> 48 - 4 - 3 = 41 context tokens per window; 480
    # tokens, step 12: starts 0, 12, ..., 444 (444 + 41 >= 480) = 38 windows
    assert len(features) == 38
    # answer tokens 262..267 lie whole in windows starting 228, 240, 252 (19, 20, 21), at
    # 6 + (262 - start) .. 6 + (267 - start); max context of 262: min(34, 6) = 6,
    # min(22, 18) = 18, min(10, 30) = 10 -> window 20
    peaks = {i: (f.start_position, f.end_position, 4.0)
             for i, f in enumerate(features) if f.start_position}
    assert peaks == {19: (40, 45, 4.0), 20: (28, 33, 4.0), 21: (16, 21, 4.0)}
    assert features[20].token_is_max_context[28] and not features[19].token_is_max_context[40]
    for i, (s, e, _) in peaks.items():
        pieces = tokenizer.id_to_token(features[i].input_word_ids[[s, e]]).numpy().tolist()
        assert pieces == [b"zoe", "京".encode()]
    start, end = _peaked_logits(features, peaks, 48)
    result = decode_predictions([ex], features, start, end)["fr"]
    assert result["text"] == answer  # original accents, spacing and CJK
    assert result["start_char"] == start_char and result["end_char"] == start_char + 14
    assert squad_em_f1(predicted_texts({"fr": result}), [ex])["exact_match"] == 100.0


def test_v2_no_answer(tokenizer):
    context = "The whale is white. The captain is Ahab."
    impossible = SquadExample("none", "Who is the cook?", context, (), is_impossible=True)
    answerable = SquadExample("ahab", "Who is the captain?", context,
                              (SquadAnswer("Ahab", context.index("Ahab")),))
    features = squad_features([impossible, answerable], tokenizer, seq_length=32,
                              max_query_length=8)
    assert [(f.start_position, f.end_position) for f in features] == [(0, 0), (15, 16)]
    # question "who is the captain ?" = 5 tokens -> context starts at 7: the whale is white .
    # the captain is (7..14), ah ##ab = 15, 16
    # logits: [CLS] 3 + 3 = null 6 in both; the span at 15..16 scores 2 + 2 = 4 in feature 0
    # (the impossible question, "who is the cook ?" is also 5 tokens) and 5 + 5 = 10 in 1
    start, end = _peaked_logits(features, {0: (15, 16, 2.0), 1: (15, 16, 5.0)}, 32)
    start[:, 0] = end[:, 0] = 3.0
    results = decode_predictions([impossible, answerable], features, start, end,
                                 allow_no_answer=True)
    # null 6 - best 4 = 2 > 0 -> no answer ; null 6 - best 10 = -4 -> "Ahab"
    assert results["none"]["text"] == "" and results["none"]["score"] == 6.0
    assert results["none"]["start_char"] is None
    assert results["ahab"]["text"] == "Ahab" and results["ahab"]["null_score"] == 6.0
    assert "" in [c["text"] for c in results["ahab"]["nbest"]]
    # a threshold of 2.5 > 2 keeps the span
    lenient = decode_predictions([impossible], features[:1], start[:1], end[:1],
                                 allow_no_answer=True, null_score_threshold=2.5)
    assert lenient["none"]["text"] == "Ahab"
    assert squad_em_f1(predicted_texts(results), [impossible, answerable]) == {
        "exact_match": 100.0, "f1": 100.0, "total": 2, "has_answer_exact_match": 100.0,
        "has_answer_f1": 100.0, "has_answer_total": 1, "no_answer_exact_match": 100.0,
        "no_answer_f1": 100.0, "no_answer_total": 1}
