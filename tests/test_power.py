"""Power and sample size: exact McNemar power against enumeration of every 2 x 2
table through calipers.mcnemar itself; Connor's formulas; the AUC power model
against a simulation of DeLong's test."""

import math

import numpy as np
import pytest
from scipy import stats

import calipers


def _power_by_tables(n, p_ab, p_ba, alpha):
    """Sum the multinomial probability of every table whose McNemar p <= alpha."""
    p_same = 1 - p_ab - p_ba
    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            prob = stats.multinomial.pmf([b, c, n - b - c], n, [p_ab, p_ba, p_same])
            if calipers.mcnemar([[0, b], [c, n - b - c]], method="exact").pvalue <= alpha:
                total += prob
    return total


@pytest.mark.parametrize("n,p_ab,p_ba", [(25, 0.2, 0.05), (30, 0.1, 0.1), (18, 0.3, 0.0)])
def test_exact_mcnemar_power_equals_enumeration(n, p_ab, p_ba):
    got = calipers.mcnemar_power(n, p_ab, p_ba, alpha=0.05)
    assert got == pytest.approx(_power_by_tables(n, p_ab, p_ba, 0.05), abs=1e-10)


def test_exact_size_at_most_alpha_and_normal_close_for_large_n():
    assert calipers.mcnemar_power(200, 0.1, 0.1) <= 0.05
    exact = calipers.mcnemar_power(400, 0.12, 0.06)
    normal = calipers.mcnemar_power(400, 0.12, 0.06, method="normal")
    assert abs(exact - normal) < 0.05


def test_connor_sample_size_is_the_first_n_reaching_power():
    n = calipers.mcnemar_sample_size(0.15, 0.05, power=0.8, alpha=0.05)
    # Connor (1987): n = (z_a sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2
    za, zb = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    want = math.ceil((za * math.sqrt(0.2) + zb * math.sqrt(0.2 - 0.01)) ** 2 / 0.01)
    assert n == want == 155
    assert calipers.mcnemar_power(n, 0.15, 0.05, method="normal") >= 0.8
    assert calipers.mcnemar_power(n - 1, 0.15, 0.05, method="normal") < 0.8


def _binormal(rng, n_pos, n_neg, mu_a, mu_b, rho):
    cov = [[1, rho], [rho, 1]]
    pos = rng.multivariate_normal([mu_a, mu_b], cov, size=n_pos)
    neg = rng.multivariate_normal([0, 0], cov, size=n_neg)
    y = np.r_[np.ones(n_pos, int), np.zeros(n_neg, int)]
    return y, np.r_[pos[:, 0], neg[:, 0]], np.r_[pos[:, 1], neg[:, 1]]


def test_auc_power_matches_simulated_delong_rejections():
    rng = np.random.default_rng(7)
    n_pos = n_neg = 120
    mu_a, mu_b, rho = 1.2, 0.8, 0.6
    auc_a, auc_b = stats.norm.cdf(mu_a / math.sqrt(2)), stats.norm.cdf(mu_b / math.sqrt(2))
    sims = 300
    est_a, est_b, reject = [], [], 0
    for _ in range(sims):
        y, a, b = _binormal(rng, n_pos, n_neg, mu_a, mu_b, rho)
        res = calipers.delong_test(y, a, b)
        est_a.append(res.auc_a)
        est_b.append(res.auc_b)
        reject += res.pvalue <= 0.05
    r = float(np.corrcoef(est_a, est_b)[0, 1])
    pred = calipers.auc_difference_power(auc_a, auc_b, n_pos=n_pos, n_neg=n_neg,
                                         correlation=r).power
    emp = reject / sims
    # Hanley-McNeil's variance is an approximation of the binormal one;
    # allow three simulation standard errors plus 0.05 of model error.
    assert abs(pred - emp) < 3 * math.sqrt(emp * (1 - emp) / sims) + 0.05


def test_auc_sample_size_and_mdd_invert_the_power():
    n = calipers.auc_difference_sample_size(0.85, 0.80, prevalence=0.3, correlation=0.5)
    p = round(n * 0.3)
    assert calipers.auc_difference_power(0.85, 0.80, n_pos=p, n_neg=n - p).power >= 0.8
    p1 = round((n - 1) * 0.3)
    assert calipers.auc_difference_power(0.85, 0.80, n_pos=p1, n_neg=n - 1 - p1).power < 0.8
    d = calipers.auc_minimum_detectable_difference(0.80, n_pos=300, n_neg=700)
    assert calipers.auc_difference_power(0.80 + d, 0.80, n_pos=300, n_neg=700).power == \
        pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize("call,match", [
    (lambda: calipers.mcnemar_power(0, 0.1, 0.1), "n must be an integer"),
    (lambda: calipers.mcnemar_power(10, 0.7, 0.4), "p_ab \\+ p_ba"),
    (lambda: calipers.mcnemar_power(10, 0.1, 0.1, alpha=1.5), "alpha must be in"),
    (lambda: calipers.mcnemar_sample_size(0.1, 0.1), "no difference"),
    (lambda: calipers.auc_difference_power(1.2, 0.8, n_pos=5, n_neg=5), "auc_a must be in"),
    (lambda: calipers.auc_difference_power(0.9, 0.8, n_pos=5, n_neg=5, correlation=1),
     "correlation must be in"),
])
def test_invalid_arguments_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_without_scipy_the_error_names_the_extra(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.stats", None)
    with pytest.raises(ImportError, match=r"mcnemar needs scipy.*stats extra"):
        calipers.mcnemar([[5, 3], [1, 7]])
    with pytest.raises(ImportError, match=r"mcnemar_sample_size needs scipy"):
        calipers.mcnemar_sample_size(0.15, 0.05, power=0.8)
