"""`bench/scale_model.py`, the paper model of docs/scaling.md: the page's tables are the
script's output, its parameter count is a built pretrainer's, and one of its figures equals
the same arithmetic written out here from published counts and the H200's measured rates."""

from __future__ import annotations

import math
import os
import re

import pytest

from bench import scale_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(REPO, "docs", "scaling.md")


def test_the_page_holds_the_scripts_tables():
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    held = re.search(r"<!-- bench/scale_model\.py --markdown: from here -->\n(.*?)"
                     r"<!-- bench/scale_model\.py --markdown: to here -->", page, re.DOTALL)
    assert held, "docs/scaling.md lost its markers"
    assert held.group(1) == scale_model.markdown(scale_model.h200_steps()), (
        "docs/scaling.md is stale: paste `python bench/scale_model.py --markdown` between "
        "its markers")


def test_the_parameter_count_is_a_built_pretrainers():
    from keras_bert import BertConfig, BertEncoder
    from keras_bert.models import BertPretrainer

    # Every dimension different, so that a term counted with the wrong one shows.
    config = BertConfig(vocab_size=97, hidden_size=24, num_layers=3, num_heads=2,
                        intermediate_size=40, max_position_embeddings=33, type_vocab_size=3)
    model = BertPretrainer(BertEncoder(config))
    built = sum(math.prod(v.shape) for v in model.trainable_variables)
    assert scale_model.parameters(config) == built == model.count_params()


def test_bert_large_on_8_nodes_by_hand():
    """BERT-Large, 64 GPUs, a 400 Gb/s NIC per GPU, no overlap."""
    # transformers' `BertModel` of bert-large-uncased has 335,141,888 parameters (encoder and
    # pooler); the MLM head adds its transform (1024 x 1024 + 1024), layer norm (2 x 1024)
    # and output bias (30,522), the NSP head 1024 x 2 + 2.
    params = 335_141_888 + (1024 * 1024 + 1024) + 2 * 1024 + 30_522 + (1024 * 2 + 2)
    gradient_bytes = 4 * params
    nvlink = 2 * 7 / 8 * gradient_bytes / 450e9  # ring of 8, 900 GB/s both ways together
    network = 2 * 7 / 8 * (gradient_bytes / 8) / 50e9  # ring of 8 nodes, an eighth per NIC
    compute = 512 / ((1_436 + 1_425) / 2)  # bench/RESULTS.md: the H200's two calls at 512
    expected = compute / (compute + nvlink + network)
    row = next(r for r in scale_model.rows(scale_model.h200_steps())
               if r["model"] == "BERT-Large" and r["devices"] == 64)
    assert row["params"] == params
    assert row["none"] == pytest.approx(expected, rel=1e-12)
    assert f"{expected:.1%}" == "97.0%"


def test_results_without_the_h200_table_are_refused(tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text("| BERT-base | 1,024 | 1 | **4,085** |\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected one batch for each of"):
        scale_model.h200_steps(str(results))
