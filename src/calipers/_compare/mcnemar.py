"""McNemar's test of paired correctness of two classifiers (exact binomial, mid-p, chi-squared
with and without continuity correction); p-values from ``scipy.stats`` (imported when called)."""

from __future__ import annotations

import numpy as np

from .._core import xp as B
from .._core.results import result_type

__all__ = ["McNemarResult", "mcnemar", "mcnemar_table"]


@result_type(meta=("method",))
class McNemarResult:
    """McNemar's test: ``statistic``, ``pvalue``, the discordant counts ``b``
    (A right, B wrong) and ``c``, and the ``method`` (a static pytree field)."""

    statistic: float
    pvalue: float
    b: int
    c: int
    method: str


def mcnemar_table(y_true, y_pred_a, y_pred_b):
    """2 x 2 table of paired correctness: rows A correct / wrong, columns B correct / wrong.

    ``table[0][1]`` (b) counts examples A gets right and B wrong, ``table[1][0]``
    (c) the reverse. Labels may be of any kind (correct means equal to
    ``y_true``). Returns a NumPy int64 array. Raises ``ValueError`` for arrays
    that are not 1-D, of different lengths or empty.
    """
    xp, (y, a, b) = B.as_arrays(y_true, y_pred_a, y_pred_b)
    B.check_1d("y_true", y)
    B.check_1d("y_pred_a", a)
    B.check_1d("y_pred_b", b)
    B.check_same_length(y_true=y, y_pred_a=a, y_pred_b=b)
    B.check_nonempty("y_true", y)
    ra = np.asarray(B.to_numpy(a == y), dtype=bool)
    rb = np.asarray(B.to_numpy(b == y), dtype=bool)
    return np.array([[np.sum(ra & rb), np.sum(ra & ~rb)],
                     [np.sum(~ra & rb), np.sum(~ra & ~rb)]], dtype=np.int64)


def mcnemar(table, *, method: str = "exact") -> McNemarResult:
    """McNemar's test of equal error rates of two classifiers on the same examples.

    Only the discordant counts matter: ``b = table[0][1]`` (A right, B wrong)
    and ``c = table[1][0]`` (A wrong, B right); build the table with
    :func:`mcnemar_table`. Under H0, b ~ Binomial(b + c, 1/2). Two-sided.

    method
        ``"exact"``: statistic ``min(b, c)``, p = ``min(1, 2 P(X <= min(b, c)))``
        (McNemar 1947; the binomial sign test). ``"midp"``:
        ``2 P(X <= min(b, c)) - P(X = min(b, c))``, the exact p before its clip
        at 1 less the observed count's probability (1 when b = c; Fagerland,
        Lydersen & Laake 2013), less conservative. ``"chi2"``:
        ``(b - c)^2 / (b + c)`` on 1 degree of freedom. ``"chi2_cc"``: Edwards' continuity correction
        ``(max(|b - c| - 1, 0))^2 / (b + c)``.

    b + c = 0 (no discordant pair) is no evidence of a difference: statistic
    0 and p = 1 for every method, never a division error (statsmodels' chi2
    with correction returns (inf, 0) there; statsmodels PR #950, huggingface/evaluate PR #795). With b = c the
    corrected statistic is 0 (statsmodels gives 1 / (b + c)).

    Returns ``McNemarResult(statistic, pvalue, b, c, method)`` of Python numbers.
    Raises ``ValueError`` for a table that is not 2 x 2 of non-negative integers
    or an unknown method. Eager only (p-values come from ``scipy.stats``).
    """
    if method not in ("exact", "midp", "chi2", "chi2_cc"):
        raise ValueError(f"method must be 'exact', 'midp', 'chi2' or 'chi2_cc', got {method!r}")
    t = np.asarray(B.to_numpy(table) if not isinstance(table, (list, tuple)) else table)
    if t.shape != (2, 2):
        raise ValueError(f"table must be 2 x 2, got shape {t.shape}")
    if not (np.issubdtype(t.dtype, np.integer) or (np.issubdtype(t.dtype, np.floating)
                                                    and np.all(np.isfinite(t))
                                                    and np.all(t == np.round(t)))):
        raise ValueError("table must hold non-negative integer counts")
    if np.any(t < 0):
        raise ValueError("table must hold non-negative integer counts")
    b, c = int(t[0, 1]), int(t[1, 0])
    n = b + c
    if n == 0:
        return McNemarResult(0.0, 1.0, b, c, method)
    stats = B.scipy_stats("mcnemar")

    if method in ("exact", "midp"):
        k = min(b, c)
        p = min(1.0, 2.0 * float(stats.binom.cdf(k, n, 0.5)))
        if method == "midp":
            p = min(1.0, p - float(stats.binom.pmf(k, n, 0.5))) if b != c else 1.0
        return McNemarResult(float(k), p, b, c, method)
    d = abs(b - c)
    if method == "chi2_cc":
        d = max(d - 1, 0)
    stat = d * d / n
    return McNemarResult(float(stat), float(stats.chi2.sf(stat, 1)), b, c, method)
