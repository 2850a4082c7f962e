"""Task metrics against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from keras_bert.tasks.question_answering.metrics import normalize_answer, squad_em_f1, token_f1
from keras_bert.tasks.text_classification.metrics import accuracy, average_ranks, pearson, spearman
from keras_bert.tasks.token_classification.metrics import entity_f1, get_entities


def test_accuracy():
    # matches at positions 0 and 2 -> 2 / 4
    assert accuracy([1, 0, 2, 2], [1, 1, 2, 0]) == 0.5
    with pytest.raises(ValueError, match="shapes"):
        accuracy([1, 2], [1])


def test_pearson_by_hand():
    # x = 1,2,3,4 (mean 2.5) -> dx = -1.5,-0.5,0.5,1.5 ; y = 2,4,5,9 (mean 5) -> dy = -3,-1,0,4
    # sum dx*dy = 4.5 + 0.5 + 0 + 6 = 11 ; sum dx^2 = 5 ; sum dy^2 = 26 -> r = 11 / sqrt(130)
    assert pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))
    assert pearson([1, 2, 3], [-1, -2, -3]) == pytest.approx(-1.0)
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))  # constant input: undefined


def test_spearman_with_ties():
    # ranks of x = 10,20,20,30: 1, (2+3)/2, (2+3)/2, 4 = 1, 2.5, 2.5, 4 ; ranks of y = 1,3,2,4
    assert list(average_ranks([10, 20, 20, 30])) == [1, 2.5, 2.5, 4]
    # both mean 2.5: dx = -1.5,0,0,1.5 ; dy = -1.5,0.5,-0.5,1.5
    # sum dx*dy = 2.25 + 0 + 0 + 2.25 = 4.5 ; sum dx^2 = 4.5 ; sum dy^2 = 5
    # rho = 4.5 / sqrt(4.5 * 5) = sqrt(0.9)
    assert spearman([10, 20, 20, 30], [1, 3, 2, 4]) == pytest.approx(math.sqrt(0.9))
    # monotone but non-linear: Spearman 1, Pearson below 1
    assert spearman([1, 2, 3, 4], [1, 10, 100, 1000]) == pytest.approx(1.0)


def test_average_ranks_three_way_tie():
    # 5 is smallest (rank 1); the three 7s take ranks 2,3,4 -> 3 each; 9 is rank 5
    assert list(average_ranks([7, 5, 7, 9, 7])) == [3, 1, 3, 5, 3]


def test_entities_are_maximal_runs_of_one_type():
    # B-PER then I-LOC: the type changes, so two entities (end exclusive)
    assert get_entities(["B-PER", "I-LOC", "O"]) == [("PER", 0, 1), ("LOC", 1, 2)]
    assert get_entities(["B-PER", "I-PER", "B-PER", "O", "I-ORG"]) == [
        ("PER", 0, 2), ("PER", 2, 3), ("ORG", 4, 5)]


def test_entity_f1_one_partial_match():
    true = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG", "I-ORG"]]
    pred = [["B-PER", "I-PER", "O", "B-LOC", "I-LOC"], ["B-ORG", "I-ORG", "O"]]
    # gold: PER[0:2], LOC[3:4], ORG[0:3]; predicted: PER[0:2], LOC[3:5] (too long),
    # ORG[0:2] (too short) -> only PER is exact: P = 1/3, R = 1/3, F1 = 1/3
    result = entity_f1(true, pred)
    assert result["precision"] == pytest.approx(1 / 3)
    assert result["recall"] == pytest.approx(1 / 3)
    assert result["f1"] == pytest.approx(1 / 3)
    assert result["per_type"]["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0,
                                         "support": 1}
    assert result["per_type"]["LOC"]["f1"] == 0.0
    assert result["per_type"]["ORG"]["support"] == 1


def test_entity_f1_precision_differs_from_recall():
    # gold: PER[0:2]; predicted: PER[0:2], LOC[3:4] -> P = 1/2, R = 1/1,
    # F1 = 2 * 0.5 * 1 / 1.5 = 2/3
    result = entity_f1(["B-PER", "I-PER", "O", "O"], ["B-PER", "I-PER", "O", "B-LOC"])
    assert (result["precision"], result["recall"]) == (0.5, 1.0)
    assert result["f1"] == pytest.approx(2 / 3)
    assert result["per_type"]["LOC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                         "support": 0}


def test_iob1_and_iob2_like_seqeval():
    tags = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]
    # default mode (conlleval): I after O starts an entity; B always does
    both = [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 5)]
    assert get_entities(tags, "IOB2") == both
    assert get_entities(tags, "IOB1") == both
    # strict IOB1 reads the same (B separates two adjacent LOCs)
    assert get_entities(tags, "IOB1", strict=True) == both
    # strict IOB2: an entity must begin with B, so only LOC[4:5] remains
    assert get_entities(tags, "IOB2", strict=True) == [("LOC", 4, 5)]
    assert get_entities(tags, "BIO", strict=True) == [("LOC", 4, 5)]
    # a prediction with a stray I: F1 1 by default, 0 in strict IOB2 (no predicted entity)
    true, pred = ["B-PER", "I-PER", "O"], ["I-PER", "I-PER", "O"]
    assert entity_f1(true, pred, "IOB2")["f1"] == 1.0
    assert entity_f1(true, pred, "IOB2", strict=True)["f1"] == 0.0


def test_entity_f1_rejects_bad_input():
    with pytest.raises(ValueError, match="scheme"):
        entity_f1(["O"], ["O"], scheme="IOBES")
    with pytest.raises(ValueError, match="Invalid tag 'E-PER'"):
        entity_f1(["E-PER"], ["O"])
    with pytest.raises(ValueError, match="sentence 0"):
        entity_f1([["O", "O"]], [["O"]])


def test_normalize_answer():
    assert normalize_answer("The  Eiffel-Tower, in  PARIS!") == "eiffeltower in paris"
    assert normalize_answer("an apple a day") == "apple day"


def _dataset(*questions):
    qas = [{"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0}
                                                      for t in golds], **extra}
           for qid, golds, extra in questions]
    return {"data": [{"paragraphs": [{"context": "unused", "qas": qas}]}]}


def test_squad_v1_em_f1_by_hand():
    dataset = _dataset(("q1", ["Eiffel Tower"], {}), ("q2", ["an apple", "apples"], {}),
                       ("q3", ["1,000 miles"], {}), ("q4", ["anything"], {}))
    predictions = {"q1": "the Eiffel Tower, in Paris!", "q2": "Apple.", "q3": "about 1000 miles"}
    # q1: pred "eiffel tower in paris" (4 tokens) vs gold "eiffel tower" (2): common 2,
    #     P = 2/4, R = 2/2, F1 = 2*0.5*1/1.5 = 2/3 ; EM 0
    assert token_f1(predictions["q1"], "Eiffel Tower") == pytest.approx(2 / 3)
    # q2: "apple" equals the normalised first gold "apple": EM 1, F1 1 (max over golds)
    # q3: gold "1000 miles" (comma dropped), pred "about 1000 miles": common 2,
    #     P = 2/3, R = 1, F1 = 2*(2/3)/(5/3) = 0.8 ; EM 0
    # q4: no prediction -> 0, 0
    result = squad_em_f1(predictions, dataset)
    assert result["total"] == 4
    assert result["exact_match"] == pytest.approx(100 * (0 + 1 + 0 + 0) / 4)  # 25
    assert result["f1"] == pytest.approx(100 * (2 / 3 + 1 + 0.8 + 0) / 4)  # 61.67
    assert "has_answer_f1" not in result


def test_squad_v2_no_answer():
    dataset = _dataset(("q5", [], {"is_impossible": True}), ("q6", [], {"is_impossible": True}),
                       ("q7", ["Paris"], {}), ("q8", ["Paris"], {}))
    predictions = {"q5": "", "q6": "something", "q7": "", "q8": "paris"}
    # q5: gold "" and pred "" -> EM 1, F1 1 ; q6: pred non-empty for no-answer -> 0
    # q7: pred "" for an answerable question -> 0 ; q8: "paris" == "paris" -> 1
    result = squad_em_f1(predictions, dataset)
    assert result["exact_match"] == result["f1"] == 50.0  # (1 + 0 + 0 + 1) / 4
    assert result["has_answer_exact_match"] == 50.0 and result["has_answer_total"] == 2
    assert result["no_answer_f1"] == 50.0 and result["no_answer_total"] == 2
    # v1.1 F1 scores an empty side 0; v2.0 scores empty-vs-empty 1
    assert token_f1("", "the", version_2=False) == 0.0
    assert token_f1("", "the", version_2=True) == 1.0
