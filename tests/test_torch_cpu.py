"""torch CPU tensors run on the NumPy kernels and come back as torch tensors.

References: the NumPy call on the same values, and the array-API path on torch
(the fast path switched off), which must agree value for value and dtype for dtype.
"""

import numpy as np
import pytest

import calipers
from calipers._core import compile as C

torch = pytest.importorskip("torch")

FUNCS = [calipers.roc_auc_score, calipers.average_precision_score, calipers.log_loss,
         calipers.brier_score_loss]


def _data(dtype):
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 300)
    y[:2] = [0, 1]
    p = np.round(rng.random(300), 2)           # ties
    return torch.from_numpy(y), torch.from_numpy(p).to(dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_torch_cpu_matches_array_api_path_and_numpy(fn, dtype, monkeypatch):
    y, p = _data(getattr(torch, dtype))
    fast = fn(y, p)
    ref_np = fn(y.numpy(), p.numpy())
    monkeypatch.setattr(C, "_torch_cpu_call", lambda *a: (False, None))
    slow = fn(y, p)
    assert isinstance(fast, torch.Tensor) and fast.device.type == "cpu"
    assert fast.dtype == slow.dtype and fast.shape == slow.shape
    np.testing.assert_allclose(fast.numpy(), slow.numpy(), rtol=1e-6 if dtype == "float32" else 1e-12)
    np.testing.assert_allclose(fast.numpy(), np.asarray(ref_np), rtol=0)


def test_torch_requires_grad_is_detached_not_copied():
    y, p = _data(torch.float64)
    p = p.clone().requires_grad_(True)
    out = calipers.roc_auc_score(y, p)
    assert isinstance(out, torch.Tensor)
    assert float(out) == float(calipers.roc_auc_score(y.numpy(), p.detach().numpy()))


def test_torch_errors_name_the_argument():
    y, p = _data(torch.float64)
    with pytest.raises(ValueError, match="y_score"):
        calipers.roc_auc_score(y, p[:10])


@pytest.mark.parametrize("metric", ["roc_auc", "average_precision", "log_loss", "brier"])
@pytest.mark.parametrize("resampling", ["multinomial", "poisson"])
def test_torch_paired_bootstrap_runs_on_the_same_memory_as_numpy(metric, resampling):
    y, p = _data(torch.float64)
    q = torch.from_numpy(np.round(np.random.default_rng(8).random(300), 2))
    kw = dict(n_resamples=60, seed=3, resampling=resampling)
    got = calipers.paired_bootstrap(metric, y, p, q, **kw)
    want = calipers.paired_bootstrap(metric, y.numpy(), p.numpy(), q.numpy(), **kw)
    assert got.difference == want.difference
    np.testing.assert_array_equal(got.bootstrap_distribution, want.bootstrap_distribution)
    assert got.confidence_interval == want.confidence_interval
    ra, rb = calipers.paired_bootstrap_replicates(metric, y, p, q, **kw)
    na, nb = calipers.paired_bootstrap_replicates(metric, y.numpy(), p.numpy(), q.numpy(), **kw)
    assert isinstance(ra, torch.Tensor) and ra.dtype == torch.float64
    np.testing.assert_array_equal(ra.numpy(), na)
    np.testing.assert_array_equal(rb.numpy(), nb)


def test_torch_paired_bootstrap_user_metric_still_gets_tensors():
    y, p = _data(torch.float64)
    seen = []

    def metric(yt, s, sample_weight=None):
        seen.append(type(s))
        return calipers.brier_score_loss(yt, s, sample_weight=sample_weight)

    calipers.paired_bootstrap_replicates(metric, y, p, 1 - p, n_resamples=4, seed=0)
    assert seen and all(t is torch.Tensor for t in seen)
