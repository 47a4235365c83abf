"""calipers.retrieval.evaluate: bad input is a ValueError naming the argument, the file and
line, or the measure as the user wrote it; the means of the counts are means."""

import numpy as np
import pytest

from calipers import retrieval as R

QRELS = {"q1": {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d1": 1}}
RUN = {"q1": {"d1": 0.5, "d2": 0.9, "d4": 0.1}, "q2": {"d1": 0.3, "d5": 0.2}}


@pytest.mark.parametrize("level", [1.5, "2", True, None])
def test_relevance_level_must_be_an_integer(level):
    with pytest.raises(ValueError, match="relevance_level must be an integer"):
        R.evaluate(QRELS, RUN, "map", relevance_level=level)


def test_relevance_level_numpy_integer_is_accepted():
    assert R.evaluate(QRELS, RUN, "map", relevance_level=np.int64(2)).mean == \
        R.evaluate(QRELS, RUN, "map", relevance_level=2).mean


def test_average_ties_error_names_the_measure_as_written():
    with pytest.raises(ValueError, match=r"not for Judged@10 \(use ties='trec_eval'\)"):
        R.evaluate(QRELS, RUN, ["map", "Judged@10"], ties="average")


def test_empty_qrels_are_named():
    with pytest.raises(ValueError, match="qrels: no judgement"):
        R.evaluate({}, RUN, "map")


def test_empty_measure_list_is_refused_and_none_means_all_trec():
    with pytest.raises(ValueError, match="measures is empty"):
        R.evaluate(QRELS, RUN, [])
    assert "map" in R.evaluate(QRELS, RUN, None).measures


def test_bad_utf8_names_the_line_of_the_bad_byte(tmp_path):
    q = tmp_path / "qrels.txt"
    # enough good lines that the decoder reads ahead of the line being parsed
    q.write_bytes(b"".join(b"q1 0 d%d 1\n" % i for i in range(2000)) + b"q1 0 e 1\xff\n")
    r = tmp_path / "run.txt"
    r.write_text("q1 Q0 d1 1 1.0 r\n")
    with pytest.raises(R.TrecFormatError, match=r"qrels.txt, line 2001: not UTF-8"):
        R.evaluate(q, r, "map")


def test_count_means_are_means_and_the_sum_is_the_values_sum():
    res = R.evaluate(QRELS, RUN, ["num_ret", "num_rel", "NumRet", "NumQ"])
    assert res.values["num_ret"].tolist() == [3.0, 2.0]
    assert res.mean["num_ret"] == 2.5 and res.values["num_ret"].sum() == 5
    assert res.mean["NumRet"] == res.mean["num_ret"]
    assert "NumQ" in res.measures and "NumQ" not in res.values and "NumQ" not in res.mean


def test_families_name_each_measures_trec_eval_family():
    res = R.evaluate(QRELS, RUN, ["P.5", "gm_map", "nDCG@10", "NumRet(rel=2)", "NumRel", "NumQ",
                                  "relstring.3"])
    assert dict(zip(res.measures, res.families)) == {
        "P_5": "P", "gm_map": "gm_map", "relstring_3": "relstring", "nDCG@10": "ndcg_cut",
        "NumRet(rel=2)": "num_rel_ret", "NumRel": "num_rel", "NumQ": "num_q"}
