"""McNemar's test of paired correctness of two classifiers (exact binomial, mid-p, chi-squared
with and without continuity correction). Eager p-values come from ``scipy.stats`` (imported when
called); under ``jax.jit`` the binomial tails are regularised incomplete beta functions computed
on the device (Loader's saddle-point binomial probability times the incomplete beta's power
series) and the chi-squared tail is ``erfc``."""

from __future__ import annotations

import math

import numpy as np

from .._core import xp as B
from .._core import validation as V
from .._core.results import result_type
from .._core.types import Array, ArrayLike

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


def mcnemar_table(y_true: ArrayLike, y_pred_a: ArrayLike, y_pred_b: ArrayLike) -> Array:
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
    for name, arr in (("y_true", y), ("y_pred_a", a), ("y_pred_b", b)):
        if B.is_numpy(xp) and arr.dtype.kind == "O":
            V.unique_labels(arr, name)      # None (or two kinds of label): named, never counted
    ra = np.asarray(B.to_numpy(a == y), dtype=bool)
    rb = np.asarray(B.to_numpy(b == y), dtype=bool)
    return np.array([[np.sum(ra & rb), np.sum(ra & ~rb)],
                     [np.sum(~ra & rb), np.sum(~ra & ~rb)]], dtype=np.int64)


def mcnemar(table: ArrayLike, *, method: str = "exact") -> McNemarResult:
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
    or an unknown method.

    Under ``jax.jit`` every method runs on the device and the fields are 0-d
    arrays (``method`` stays a static string). The binomial tail is the
    regularised incomplete beta function, ``P(X <= k) = I_{1/2}(n - k, k + 1)``
    for X ~ Binomial(n, 1/2), so the exact p is ``min(1, 2 I_{1/2}(n - k, k + 1))``
    and the mid-p is ``P(X <= k) + P(X <= k - 1)`` (the same number as above,
    written without a subtraction); the chi-squared tail on 1 degree of freedom
    is ``erfc(sqrt(x / 2))``. Float32 without x64: p within 1e-6 of the eager
    value for b + c up to about 10^4 (about 2e-6 near 10^5); with x64 within
    about 1e-13 relative. A table whose counts are negative or not whole numbers
    cannot raise under ``jit``: every field is then NaN.
    """
    method = V.choice(method, "method", ("exact", "midp", "chi2", "chi2_cc"))
    if not isinstance(table, (list, tuple)) and B.is_traced(table):
        return _mcnemar_traced(table, method)
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


# stirlerr(m) = lgamma(m + 1) - (m + 1/2) ln m + m - ln sqrt(2 pi) at m = 0..15, where the
# asymptotic series is not yet accurate; stirlerr(0) = 0 is never used (the m = 0 terms cancel).
_STIRLERR = [0.0] + [math.lgamma(m + 1) - (m + 0.5) * math.log(m) + m
                     - 0.5 * math.log(2 * math.pi) for m in range(1, 16)]


def _stirlerr(m, jnp):
    """Stirling's error term ln(m!) - ln(sqrt(2 pi m) (m/e)^m) (Loader 2000), table then series."""
    mm = jnp.maximum(m, 1.0)
    m2 = mm * mm
    series = (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - 1 / (1188 * m2)) / m2) / m2) / m2) / mm
    table = jnp.asarray(_STIRLERR, dtype=m.dtype)[jnp.clip(m, 0, 15).astype(int)]
    return jnp.where(m <= 15, table, series)


def _bd0(x, mu, jnp):
    """Loader's deviance term x ln(x / mu) + mu - x, by its series when x is near mu."""
    safe_x = jnp.maximum(x, 1.0)
    direct = safe_x * jnp.log(safe_x / mu) + mu - safe_x
    v = (x - mu) / (x + mu)
    ej = 2 * x * v
    total = (x - mu) * v
    for j in range(1, 40):  # |v| < 0.1: each term is at least 100 times smaller
        ej = ej * v * v
        total = total + ej / (2 * j + 1)
    near = jnp.abs(x - mu) < 0.1 * (x + mu)
    return jnp.where(x == 0, mu, jnp.where(near, total, direct))


def _binom_half_cdf(k, n, jnp, lax):
    """P(X <= k) for X ~ Binomial(n, 1/2) and 0 <= k < n, to a few float32 ulps.

    P(X <= k) = I_{1/2}(n - k, k + 1), the regularised incomplete beta function. JAX's
    ``betainc`` forms its prefactor from ``lgamma`` values of size n ln n whose difference is
    of order one, which costs about 2e-5 in float32 for n near 70; here the prefactor, the
    probability P(X = k), comes from Loader's (2000) saddle-point form (every term small and
    accurate), and I_{1/2}(n - k, k + 1) / P(X = k) is the incomplete beta's power series
    1 + k/(n-k+1) + k(k-1)/((n-k+1)(n-k+2)) + ... of positive, decreasing terms, summed until
    they no longer change the sum.
    """
    f = n.dtype
    mu = n / 2
    km = n - k
    safe_k = jnp.maximum(k, 1.0)
    log_pmf = (_stirlerr(n, jnp) - _stirlerr(k, jnp) - _stirlerr(km, jnp)
               - _bd0(k, mu, jnp) - _bd0(km, mu, jnp))
    pmf_inner = jnp.exp(log_pmf) * jnp.sqrt(n / (2 * math.pi * safe_k * km))
    pmf = jnp.where(k == 0, jnp.exp2(-n), pmf_inner)
    eps = jnp.finfo(f).eps

    def cond(state):
        j, term, total, _ = state
        return (j < k) & (term > eps * total / 4)

    def body(state):
        j, term, total, comp = state
        term = term * (k - j) / (km + j + 1)
        y = term - comp  # Kahan summation: thousands of terms when k is near n / 2
        t = total + y
        return j + 1, term, t, (t - total) - y

    one = jnp.ones((), dtype=f)
    _, _, total, _ = lax.while_loop(cond, body, (jnp.zeros((), dtype=f), one, one,
                                                 jnp.zeros((), dtype=f)))
    return jnp.minimum(pmf * total, 1.0)


def _mcnemar_traced(table, method):
    """McNemar's test on a traced JAX table: the same formulas on the device."""
    import jax.numpy as jnp
    from jax import lax
    from jax.scipy.special import erfc

    xp, (t,) = B.as_arrays(table)
    if tuple(t.shape) != (2, 2):
        raise ValueError(f"table must be 2 x 2, got shape {tuple(t.shape)}")
    f = B.acc_float(xp)
    tf = t.astype(f)
    bad = jnp.any(tf < 0) | jnp.any(tf != jnp.round(tf)) | ~jnp.all(jnp.isfinite(tf))
    b, c = tf[0, 1], tf[1, 0]
    n = b + c
    empty = n == 0
    k = jnp.minimum(b, c)
    if method in ("exact", "midp"):
        ok = ~bad & ~empty & (2 * k < n)  # b == c gives p = 1 for both methods
        safe_n = jnp.where(ok, n, 3.0).astype(f)
        safe_k = jnp.where(ok, k, 1.0).astype(f)
        cdf_k = _binom_half_cdf(safe_k, safe_n, jnp, lax)
        cdf_km1 = jnp.where(safe_k >= 1,
                            _binom_half_cdf(jnp.maximum(safe_k - 1, 0.0), safe_n, jnp, lax), 0.0)
        if method == "exact":
            p = jnp.minimum(1.0, 2.0 * cdf_k)
        else:
            p = jnp.minimum(1.0, cdf_k + cdf_km1)
        p = jnp.where(2 * k >= n, 1.0, p)
        stat = k
    else:
        d = jnp.abs(b - c)
        if method == "chi2_cc":
            d = jnp.maximum(d - 1, 0.0)
        stat = d * d / jnp.where(empty, 1.0, n)
        p = erfc(jnp.sqrt(stat / 2))
    stat = jnp.where(empty, 0.0, stat).astype(f)
    p = jnp.where(empty, 1.0, p).astype(f)
    nan = jnp.asarray(jnp.nan, dtype=f)
    return McNemarResult(jnp.where(bad, nan, stat), jnp.where(bad, nan, p),
                         t[0, 1], t[1, 0], method)
