"""Off-policy value estimates from logged bandit data: IPS, SNIPS, DM and doubly robust.

A logging policy ``pi_b`` chose action ``a_i`` in context ``x_i`` with
probability ``propensity[i] = pi_b(a_i | x_i)`` and the reward ``r_i`` was
observed. The value of a target policy ``pi_e`` is estimated from the
importance weight ``w_i = pi_e(a_i | x_i) / pi_b(a_i | x_i)``:

* IPS (Horvitz & Thompson 1952): ``mean(w * r)``;
* self-normalised IPS (SNIPS; Swaminathan & Joachims 2015):
  ``sum(w * r) / sum(w)``, undefined (NaN) when every weight is 0;
* direct method (DM): ``mean(sum_a pi_e(a | x_i) q_hat(x_i, a))``;
* doubly robust (DR; Dudík, Langford & Li 2011): DM plus
  ``mean(w * (r - q_hat(x_i, a_i)))``.

Two different "clippings", named differently (Open Bandit Pipeline issue 115;
statsmodels issue 10222): ``max_weight`` caps the weight,
``w -> min(w, max_weight)`` (Open Bandit Pipeline's ``lambda_``; Ionides
2008); ``min_propensity`` floors the propensity,
``w -> pi_e / max(pi_b, min_propensity)`` (Strehl et al. 2010). With a
stochastic target policy they give different estimates. When both are given
the floor is applied first, then the cap. In DR the (clipped) weight enters
the correction term only, as in Open Bandit Pipeline.

Kernels use the array API with static shapes and run under ``jax.jit``. The bootstrap
interval of these estimators, :func:`calipers.off_policy_interval`, lives with the
resampler it uses (:mod:`calipers._compare.offpolicy`).
"""

from __future__ import annotations

import math
from typing import Any, Callable, TypeVar

import numpy as np

from ._core import xp as B
from ._core import validation as V
from ._core.results import ConfidenceInterval, result_type
from ._core.types import Array, ArrayLike

__all__ = [
    "OffPolicyInterval",
    "importance_weights",
    "effective_sample_size",
    "ips_estimate",
    "snips_estimate",
    "direct_method_estimate",
    "doubly_robust_estimate",
]


@result_type(meta=("estimator", "n_resamples", "confidence_level"),
             renamed={"low": ("confidence_interval", "low"),
                      "high": ("confidence_interval", "high")})
class OffPolicyInterval:
    """A bootstrap interval for an off-policy value estimate.

    Attributes
    ----------
    estimate : 0-d float
        The estimator on all rows.
    confidence_interval : ConfidenceInterval
        Percentile interval of the replicates (NaN ends if every replicate is undefined).
        ``low`` / ``high`` are deprecated aliases of its ends.
    distribution : array (n_resamples,)
        The replicates (NaN where undefined, e.g. SNIPS of a resample with zero weights).
    n_undefined : int (0-d)
        Replicates that are NaN, left out of the interval.
    estimator, n_resamples, confidence_level :
        As asked (static).
    """

    estimate: Any
    confidence_interval: ConfidenceInterval
    distribution: Any
    n_undefined: Any
    estimator: str
    n_resamples: int
    confidence_level: float


# --------------------------------------------------------------------------
# validation and weights
# --------------------------------------------------------------------------

def _numeric(name, x, xp):
    V.check_real_values(name, x, xp, "numeric")


def _concrete_check(cond_bad, xp, message):
    """Raise ``message`` (with the first bad element) when a concrete mask has a True."""
    if bool(xp.any(cond_bad)):
        flat = B.mask_to_numpy(cond_bad).reshape(-1)
        i = int(np.argmax(flat))
        where = i if cond_bad.ndim == 1 else tuple(int(j) for j in
                                                   np.unravel_index(i, cond_bad.shape))
        raise ValueError(f"{message}; element {where} breaks it")


def _check_option(name, value, *, upper=None):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a positive number or None, got {value!r}")
    v = float(value)
    if not (v > 0 and (upper is None or v <= upper)) or math.isnan(v):
        rule = "in (0, 1]" if upper is not None else "> 0"
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return v


def _target_logged(target, action, xp, acc):
    """``pi_e(a_i | x_i)`` from a flat (n,) array or an (n, n_actions) matrix."""
    if target.ndim == 1:
        if action is not None:
            raise ValueError("action is only used with a 2-D target (n, n_actions); a 1-D "
                             "target already gives pi_e of the logged action")
        return xp.astype(target, acc)
    if action is None:
        raise ValueError("action is required when target is a 2-D action distribution")
    return _gather(xp.astype(target, acc), action, xp)


def _gather(matrix, action, xp):
    K = matrix.shape[1]
    onehot = xp.reshape(action, (-1, 1)) == xp.reshape(xp.arange(K), (1, -1))
    return xp.sum(xp.where(onehot, matrix, xp.zeros_like(matrix)), axis=1)


class _Logged:
    __slots__ = ("xp", "r", "w", "q_logged", "dm_rows", "invalid", "out")


def prepare_rows(reward, propensity, target, action, estimated_rewards, *, max_weight,
                 min_propensity, need_model=False):
    """The checked rows of every estimator: weights, rewards, model terms (and the bootstrap's)."""
    xp, (reward, propensity, target, action, estimated_rewards) = B.as_arrays(
        reward, propensity, target, action, estimated_rewards)
    max_weight = _check_option("max_weight", max_weight)
    min_propensity = _check_option("min_propensity", min_propensity, upper=1.0)
    _numeric("propensity", propensity, xp)
    _numeric("target", target, xp)
    B.check_1d("propensity", propensity)
    if target.ndim not in (1, 2):
        raise ValueError(f"target must be 1-D (n,) (pi_e of the logged action) or 2-D "
                         f"(n, n_actions), got shape {tuple(target.shape)}")
    if reward is not None:
        _numeric("reward", reward, xp)
        B.check_1d("reward", reward)
    if need_model:
        if estimated_rewards is None:
            raise ValueError("estimated_rewards (n, n_actions) is required")
        if target.ndim != 2:
            raise ValueError("target must be the 2-D action distribution (n, n_actions) for "
                             "the direct method and doubly robust estimates")
        _numeric("estimated_rewards", estimated_rewards, xp)
        if reward is not None and action is None:
            raise ValueError("action (the logged action indices) is required for the doubly "
                             "robust estimate")
        if tuple(estimated_rewards.shape) != tuple(target.shape):
            raise ValueError(f"estimated_rewards has shape {tuple(estimated_rewards.shape)} but "
                             f"target has shape {tuple(target.shape)}; they must match")
    if action is not None:
        B.check_1d("action", action)
        if not xp.isdtype(action.dtype, "integral") or xp.isdtype(action.dtype, "bool"):
            raise ValueError(f"action must hold integer action indices, got dtype {action.dtype}")
    n = B.check_same_length(reward=reward, propensity=propensity, target=target, action=action)
    B.check_nonempty("propensity", propensity)

    acc = B.acc_float(xp)
    traced = B.is_traced(reward, propensity, target, action, estimated_rewards)
    p = xp.astype(propensity, acc)
    t = xp.astype(target, acc)
    checks = [
        (~xp.isfinite(p) | (p <= 0) | (p > 1),
         "propensity must be in (0, 1]: a logged action cannot have logging probability 0 "
         "(its weight would be infinite)"),
        (~xp.isfinite(t) | (t < 0) | (t > 1), "target must hold probabilities in [0, 1]"),
    ]
    if reward is not None:
        checks.append((~xp.isfinite(xp.astype(reward, acc)), "reward must be finite"))
    if target.ndim == 2:
        K = target.shape[1]
        tol = V.prob_sum_tolerance(target.dtype)  # the library's one rule: sqrt(eps) of the dtype
        checks.append((xp.abs(xp.sum(t, axis=1) - 1) > tol,
                       f"each row of target must sum to 1 (within {tol:.1e})"))
        if action is not None:
            checks.append(((action < 0) | (action >= K),
                           f"action must be an index in 0 .. {K - 1}"))
    if estimated_rewards is not None:
        checks.append((~xp.isfinite(xp.astype(estimated_rewards, acc)),
                       "estimated_rewards must be finite"))
    invalid = xp.asarray(False)
    for bad, message in checks:
        if traced:
            invalid = invalid | xp.any(bad)
        else:
            _concrete_check(bad, xp, message)

    d = _Logged()
    d.xp = xp
    d.out = B.out_float(xp, *[a for a in (reward, propensity, target, estimated_rewards)
                              if a is not None])
    if need_model and action is None:  # the direct method needs no weights
        d.w = xp.zeros(n, dtype=acc)
    else:
        pi_e = _target_logged(target, action, xp, acc)
        if min_propensity is not None:
            p = xp.maximum(p, xp.asarray(min_propensity, dtype=acc))
        w = pi_e / p
        if max_weight is not None:
            w = xp.minimum(w, xp.asarray(max_weight, dtype=acc))
        d.w = w
    d.r = None if reward is None else xp.astype(reward, acc)
    d.q_logged = d.dm_rows = None
    if estimated_rewards is not None and target.ndim == 2:
        q = xp.astype(estimated_rewards, acc)
        d.dm_rows = xp.sum(t * q, axis=1)
        if action is not None:
            d.q_logged = _gather(q, action, xp)
    d.invalid = invalid
    return d


def _result(value, d):
    xp = d.xp
    return B.finalize(xp.astype(B.nan_if(d.invalid, value, xp), d.out), xp)


_ARGS_DOC = """
    reward : array (n,)
        Observed rewards, finite.
    propensity : array (n,)
        ``pi_b(a_i | x_i)``, the logging policy's probability of the logged
        action, in (0, 1]. Zero is invalid input (an action logged with
        probability 0 has an infinite weight) and raises ``ValueError``.
    target : array (n,) or (n, n_actions)
        ``pi_e(a_i | x_i)``, the target policy's probability of the logged
        action, or its full action distribution per row (rows sum to 1 within
        1e-6), in which case ``action`` is required.
    action : int array (n,), keyword
        Logged action indices (column of ``target``); only with a 2-D ``target``.
    max_weight : float > 0, optional, keyword
        Weight clipping: ``w -> min(w, max_weight)`` (Open Bandit Pipeline's ``lambda_``).
    min_propensity : float in (0, 1], optional, keyword
        Propensity flooring: ``w -> pi_e / max(pi_b, min_propensity)``
        (Strehl et al. 2010). Applied before ``max_weight`` when both are given."""


_F = TypeVar("_F", bound=Callable[..., Any])


def _doc(f: _F) -> _F:
    f.__doc__ = (f.__doc__ or "").replace("    {args}", _ARGS_DOC.strip("\n"))
    return f


@_doc
def importance_weights(propensity: ArrayLike, target: ArrayLike, *, action: ArrayLike = None,
                       max_weight: float | None = None,
                       min_propensity: float | None = None) -> Array:
    """Importance weights ``w_i = pi_e(a_i | x_i) / pi_b(a_i | x_i)``, floored and clipped as asked.

    Parameters
    ----------
    {args}

    Returns
    -------
    array (n,)
        The weights (float64, float32 on JAX without x64).

    Raises
    ------
    ValueError
        Shapes that differ, empty input, propensities outside (0, 1],
        target probabilities outside [0, 1] or rows not summing to 1, actions
        out of range, bad options. Under ``jit`` invalid values give NaN weights.

    Examples
    --------
    >>> import calipers
    >>> calipers.importance_weights([0.5, 0.25], [0.5, 0.75], max_weight=2).tolist()
    [1.0, 2.0]
    """
    d = prepare_rows(None, propensity, target, action, None, max_weight=max_weight,
                     min_propensity=min_propensity)
    return d.xp.astype(B.nan_if(d.invalid, d.w, d.xp), d.out)


def effective_sample_size(weights: ArrayLike) -> float | Array:
    """Kish's effective sample size ``(sum w)^2 / sum(w^2)`` (Kish 1965).

    Between 1 and n for non-zero weights (n when all weights are equal); 0
    when every weight is 0 (no effective sample), not NaN.

    Parameters
    ----------
    weights : array (n,)
        Non-negative importance weights, for example from
        :func:`importance_weights`.

    Returns
    -------
    0-d float

    Raises
    ------
    ValueError
        Not 1-D, empty, NaN/inf or negative weights. Under ``jit`` they give NaN.

    Examples
    --------
    >>> import calipers
    >>> float(calipers.effective_sample_size([1.0, 1.0, 0.0, 2.0]))
    2.6666666666666665
    """
    xp, (w,) = B.as_arrays(weights)
    _numeric("weights", w, xp)
    B.check_1d("weights", w)
    B.check_nonempty("weights", w)
    acc = B.acc_float(xp)
    wf = xp.astype(w, acc)
    invalid = V.check_weights("weights", w, xp)
    # scale by the largest weight: ESS is scale-free, and w**2 neither under- nor overflows
    m = xp.max(wf)
    wf = wf / xp.where(m > 0, m, xp.ones_like(m))
    s1 = xp.sum(wf)
    s2 = xp.sum(wf * wf)
    ess = xp.where(s2 > 0, s1 * s1 / xp.where(s2 > 0, s2, xp.ones_like(s2)), xp.zeros_like(s2))
    return B.finalize(xp.astype(B.nan_if(invalid, ess, xp), B.out_float(xp, w)), xp)


@_doc
def ips_estimate(reward: ArrayLike, propensity: ArrayLike, target: ArrayLike, *,
                 action: ArrayLike = None, max_weight: float | None = None,
                 min_propensity: float | None = None) -> float | Array:
    """Inverse propensity scoring: ``mean(w * r)`` (Horvitz & Thompson 1952).

    Unbiased without clipping when ``pi_b > 0`` wherever ``pi_e > 0``;
    ``max_weight`` and ``min_propensity`` trade that for variance. All weights
    zero gives 0, a real estimate. Same value as Open Bandit Pipeline's
    ``InverseProbabilityWeighting`` (with ``lambda_ = max_weight``).

    Parameters
    ----------
    {args}

    Returns
    -------
    0-d float
        The estimate (float64, float32 on JAX without x64; NumPy scalar on NumPy).

    Raises
    ------
    ValueError
        As :func:`importance_weights`, and NaN/inf rewards. Under ``jit``
        invalid values give NaN.

    Examples
    --------
    >>> import calipers
    >>> float(calipers.ips_estimate([1.0, 0.0, 1.0], [0.5, 0.25, 0.25], [1.0, 0.5, 0.5]))
    1.3333333333333333
    """
    d = prepare_rows(reward, propensity, target, action, None, max_weight=max_weight,
                     min_propensity=min_propensity)
    return _result(d.xp.mean(d.w * d.r), d)


@_doc
def snips_estimate(reward: ArrayLike, propensity: ArrayLike, target: ArrayLike, *,
                   action: ArrayLike = None, max_weight: float | None = None,
                   min_propensity: float | None = None) -> float | Array:
    """Self-normalised IPS: ``sum(w * r) / sum(w)`` (Swaminathan & Joachims 2015).

    Undefined when every weight is 0 (the target policy gives probability 0
    to every logged action): NaN with an :class:`UndefinedMetricWarning`,
    never 0. Same value as Open Bandit Pipeline's
    ``SelfNormalizedInverseProbabilityWeighting``.

    Parameters
    ----------
    {args}

    Returns
    -------
    0-d float

    Raises
    ------
    ValueError
        As :func:`ips_estimate`. Under ``jit`` invalid values give NaN, and
        all-zero weights give NaN without a warning.

    Examples
    --------
    >>> import calipers
    >>> float(calipers.snips_estimate([1.0, 0.0, 1.0], [0.5, 0.25, 0.25], [1.0, 0.5, 0.5]))
    0.6666666666666666
    """
    d = prepare_rows(reward, propensity, target, action, None, max_weight=max_weight,
                     min_propensity=min_propensity)
    xp = d.xp
    s = xp.sum(d.w)
    value = ratio_of_sums(xp.sum(d.w * d.r), s, None, xp)
    if not B.is_traced(d.w) and not bool(s > 0):
        B.warn_undefined("SNIPS is undefined: the sum of the importance weights is 0 (the "
                         "target policy gives probability 0 to every logged action); "
                         "returning NaN")
    return _result(value, d)


def direct_method_estimate(target: ArrayLike, estimated_rewards: ArrayLike) -> float | Array:
    """Direct method: ``mean_i sum_a pi_e(a | x_i) q_hat(x_i, a)``.

    Uses the reward model only (no logged rewards or propensities); biased
    when the model is.

    Parameters
    ----------
    target : array (n, n_actions)
        The target policy's action distribution per row (rows sum to 1).
    estimated_rewards : array (n, n_actions)
        ``q_hat(x_i, a)``, the reward model's estimates.

    Returns
    -------
    0-d float

    Raises
    ------
    ValueError
        Shapes that differ, empty input, probabilities outside [0, 1], rows
        not summing to 1, NaN/inf estimates. Under ``jit`` they give NaN.
    """
    xp, (target,) = B.as_arrays(target)
    n = target.shape[0] if target.ndim >= 1 else 0
    ones = xp.ones(n, dtype=B.acc_float(xp))
    d = prepare_rows(None, ones, target, None, estimated_rewards, max_weight=None,
                     min_propensity=None, need_model=True)
    return _result(d.xp.mean(d.dm_rows), d)


@_doc
def doubly_robust_estimate(reward: ArrayLike, propensity: ArrayLike, target: ArrayLike,
                           estimated_rewards: ArrayLike, *, action: ArrayLike,
                           max_weight: float | None = None,
                           min_propensity: float | None = None) -> float | Array:
    """Doubly robust estimate (Dudík, Langford & Li 2011).

    ``mean_i [ sum_a pi_e(a | x_i) q_hat(x_i, a) + w_i (r_i - q_hat(x_i, a_i)) ]``:
    unbiased when either the propensities or the reward model are right.
    The (clipped) weight enters the correction term only, as in Open Bandit
    Pipeline's ``DoublyRobust`` (same value, ``lambda_ = max_weight``). With
    all weights 0 it equals the direct method.

    Parameters
    ----------
    {args}
    estimated_rewards : array (n, n_actions)
        ``q_hat(x_i, a)``, the reward model's estimates, finite; ``target``
        must be the full (n, n_actions) distribution.

    Returns
    -------
    0-d float

    Raises
    ------
    ValueError
        As :func:`ips_estimate`; a missing ``action`` or 1-D ``target``;
        ``estimated_rewards`` of another shape. Under ``jit`` invalid values
        give NaN.
    """
    d = prepare_rows(reward, propensity, target, action, estimated_rewards,
                     max_weight=max_weight, min_propensity=min_propensity, need_model=True)
    return _result(d.xp.mean(d.dm_rows + d.w * (d.r - d.q_logged)), d)


def ratio_of_sums(tot, den_tot, n, xp):
    """``tot / n``, or ``tot / den_tot`` (NaN where ``den_tot`` is 0) when normalising."""
    if den_tot is None:
        return tot / n
    ok = den_tot > 0
    return B.nan_if(~ok, tot / xp.where(ok, den_tot, xp.ones_like(den_tot)), xp)
