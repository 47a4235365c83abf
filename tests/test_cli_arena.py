"""``calipers arena``: the numbers are the library's, the formats, and the one-line errors."""

from __future__ import annotations

import csv
import json
from importlib import resources

import numpy as np
import pytest

import calipers
from calipers.cli import main
from calipers.cli.arena import EXAMPLE


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def example_rows():
    with open(str(resources.files("calipers") / "data" / EXAMPLE), newline="") as fh:
        return list(csv.DictReader(fh))


def _outcome(rows, a="home", b="away", w="winner", tie="draw"):
    out = []
    for r in rows:
        out.append(1.0 if r[w] == r[a] else 0.0 if r[w] == r[b] else 0.5 if r[w] == tie
                   else None)
    assert None not in out
    return out


def _check_against(rep, res):
    """Every model entry of the JSON equals the library result, model by model."""
    by_name = {m["model"]: m for m in rep["models"]}
    assert sorted(by_name) == sorted(str(m) for m in res.models)
    for k, name in enumerate(res.models):
        m = by_name[str(name)]
        assert m["rating"] == res.ratings[k]
        assert m["ci_low"] == res.rating_interval.low[k]
        assert m["ci_high"] == res.rating_interval.high[k]
        assert m["rank"] == res.ranks[k]
        assert m["rank_low"] == res.rank_interval.low[k]
        assert m["rank_high"] == res.rank_interval.high[k]
        assert m["prob_best"] == res.prob_best[k]
    ratings = [m["rating"] for m in rep["models"]]
    assert ratings == sorted(ratings, reverse=True)   # best first
    assert rep["n_undefined"] == res.n_undefined


def test_example_data_is_the_season():
    """The bundled season: 380 matches, 20 clubs each playing 38, every pair twice."""
    rows = example_rows()
    assert len(rows) == 380
    clubs = sorted({r["home"] for r in rows} | {r["away"] for r in rows})
    assert len(clubs) == 20
    pairs = {(r["home"], r["away"]) for r in rows}
    assert len(pairs) == 380                          # each ordered pair once: home and away
    for r in rows:                                    # the winner follows from the score
        h, a = int(r["home_goals"]), int(r["away_goals"])
        assert r["winner"] == (r["home"] if h > a else r["away"] if a > h else "draw")
    assert sorted({int(r["matchday"]) for r in rows}) == list(range(1, 39))


def test_bundled_example_json_equals_library(capsys):
    code, out, err = run_cli(capsys, "arena", "--format", "json", "--n-resamples", "200",
                             "--seed", "5")
    assert code == 0, err
    rep = json.loads(out)
    rows = example_rows()
    res = calipers.bradley_terry_bootstrap(
        [r["home"] for r in rows], [r["away"] for r in rows], _outcome(rows),
        groups=[r["matchday"] for r in rows], n_resamples=200, seed=5)
    _check_against(rep, res)
    assert rep["resampling"] == "clusters" and rep["n_clusters"] == 38
    assert rep["n_battles"] == 380 and rep["n_ties"] == sum(r["winner"] == "draw" for r in rows)
    assert all(m["battles"] == 38 for m in rep["models"])
    # whole numbers are JSON integers ("38", never "38.0"): ranks, rank ends, battles
    for m in rep["models"]:
        for key in ("rank", "rank_low", "rank_high", "battles"):
            assert type(m[key]) is int, (key, m[key])
    assert '"battles": 38\n' in out and '"battles": 38.0' not in out


def test_bundled_example_text(capsys):
    code, out, _ = run_cli(capsys, "arena", "--n-resamples", "100")
    assert code == 0
    assert "premier_league_2023_24.csv (bundled example)" in out
    assert "380 battles of 20 models" in out
    assert "the 38 clusters of 'matchday'" in out
    first = [ln for ln in out.splitlines() if ln.startswith("1 ")][0]
    assert "Manchester City FC" in first


def _battles_file(tmp_path, rng, n=300, K=5, name="battles.csv"):
    models = [f"m{k}" for k in range(K)]
    strength = np.linspace(-1, 1, K)
    a = rng.integers(0, K, n)
    b = (a + rng.integers(1, K, n)) % K
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(n)
    win = np.where(u < 0.8 * p, "a", np.where(u < 0.8 * p + 0.2, "tie", "b"))
    prompt = rng.integers(0, 40, n)
    lines = ["prompt,left,right,who"]
    for i in range(n):
        w = models[a[i]] if win[i] == "a" else models[b[i]] if win[i] == "b" else "tie"
        lines.append(f"p{prompt[i]},{models[a[i]]},{models[b[i]]},{w}")
    f = tmp_path / name
    f.write_text("\n".join(lines) + "\n")
    return f, [models[i] for i in a], [models[i] for i in b], np.where(
        win == "a", 1.0, np.where(win == "b", 0.0, 0.5)), [f"p{g}" for g in prompt]


@pytest.mark.parametrize("cluster", [False, True])
def test_file_json_equals_library(capsys, tmp_path, cluster):
    f, a, b, o, g = _battles_file(tmp_path, np.random.default_rng(1))
    argv = ["arena", str(f), "--model-a", "left", "--model-b", "right", "--winner", "who",
            "--tie", "tie", "--n-resamples", "150", "--seed", "11", "--format", "json"]
    if cluster:
        argv += ["--cluster", "prompt"]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    rep = json.loads(out)
    res = calipers.bradley_terry_bootstrap(a, b, o, groups=g if cluster else None,
                                           n_resamples=150, seed=11)
    _check_against(rep, res)
    assert rep["resampling"] == ("clusters" if cluster else "battles")
    assert rep["n_ties"] == int(np.sum(o == 0.5))


def test_swapping_the_model_columns_changes_no_rating(capsys, tmp_path):
    """The winner names a model, so which column is model_a does not matter."""
    f, *_ = _battles_file(tmp_path, np.random.default_rng(2))
    common = ["--winner", "who", "--tie", "tie", "--n-resamples", "50", "--format", "json"]
    _, out1, _ = run_cli(capsys, "arena", str(f), "--model-a", "left", "--model-b", "right",
                         *common)
    _, out2, _ = run_cli(capsys, "arena", str(f), "--model-a", "right", "--model-b", "left",
                         *common)
    r1, r2 = json.loads(out1)["models"], json.loads(out2)["models"]
    assert [m["model"] for m in r1] == [m["model"] for m in r2]
    np.testing.assert_allclose([m["rating"] for m in r1], [m["rating"] for m in r2],
                               rtol=0, atol=1e-9)


def test_markdown_and_plot(capsys, tmp_path):
    f, *_ = _battles_file(tmp_path, np.random.default_rng(3))
    png = tmp_path / "ratings.png"
    code, out, err = run_cli(capsys, "arena", str(f), "--model-a", "left", "--model-b",
                             "right", "--winner", "who", "--tie", "tie", "--n-resamples", "50",
                             "--format", "markdown", "--plot", str(png))
    assert code == 0, err
    assert "| rank" in out and "|---" in out.replace(":", "")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 1000


def _one_line_error(capsys, *argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _write(tmp_path, text, name="bad.csv"):
    f = tmp_path / name
    f.write_text(text)
    return str(f)


COLS = ["--model-a", "a", "--model-b", "b", "--winner", "w", "--n-resamples", "20"]


def test_error_missing_column(capsys, tmp_path):
    f = _write(tmp_path, "a,b,winner\nx,y,x\n")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert f in line and "'w'" in line and "not found" in line


def test_error_empty_value(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w\nx,y,x\ny,x,\nx,y,y\n")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert f in line and "column 'w', row 2 (line 3)" in line and "empty value" in line


def test_error_winner_not_a_model(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w\nx,y,x\ny,z,z\nx,z,y\n")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert f in line and "column 'w', row 3 (line 4)" in line and "'y'" in line
    assert "'x' or 'z'" in line


def test_error_tie_without_tie_value(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w\nx,y,x\ny,x,draw\n")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert "column 'w', row 2" in line and "no --tie value" in line
    line = _one_line_error(capsys, "arena", f, *COLS, "--tie", "tie")
    assert "column 'w', row 2" in line and "'tie'" in line


def test_error_self_battle_and_empty_model(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w\nx,y,x\ny,y,y\n")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert f in line and "column 'b', row 2" in line and "itself" in line
    f = _write(tmp_path, "a,b,w\nx,y,x\n,y,y\n", name="bad2.csv")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert f in line and "column 'a', row 2" in line and "empty value" in line


def test_error_missing_cluster_value(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w,g\nx,y,x,1\ny,x,x,\n")
    line = _one_line_error(capsys, "arena", f, *COLS, "--cluster", "g")
    assert "column 'g', row 2" in line and "empty value" in line


def test_error_disconnected_graph(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w\nx,y,x\ny,x,x\nu,v,u\nv,u,v\n")
    line = _one_line_error(capsys, "arena", f, *COLS)
    assert f in line and "not connected" in line


def test_error_columns_required_and_bad_plot_path(capsys, tmp_path):
    f = _write(tmp_path, "a,b,w\nx,y,x\n")
    line = _one_line_error(capsys, "arena", f, "--model-a", "a")
    assert "--model-b and --winner" in line
    line = _one_line_error(capsys, "arena", "--plot", str(tmp_path / "nope" / "r.png"))
    assert "does not exist" in line
    line = _one_line_error(capsys, "arena", "--plot", str(tmp_path / "r.xyz"))
    assert "unknown image format" in line
