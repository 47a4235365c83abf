"""Reference values from Open Bandit Pipeline for tests/test_offpolicy.py.

obp 0.4.1 is the release that installs on Python 3.11 here, and only without its pinned
dependencies (old pandas/scikit-learn/scipy/Pillow builds fail) and with torch stubbed out:
its NumPy estimators never call torch.
    pip install --no-deps obp==0.4.1 && pip install matplotlib pandas seaborn pyyaml tqdm \
        mypy_extensions
    python tests/data/gen_offpolicy_anchors.py > tests/data/offpolicy_anchors.json
obp 0.4.1 has no weight clipping (``lambda_`` came in 0.5); the clipped values are pinned by
the handed case H30 instead, whose anchor values were taken with obp 0.5.7.
"""

import json
import sys
from unittest import mock

import numpy as np


def logged_data():
    """Bandit feedback: softmax logging policy, a different softmax target, Bernoulli rewards."""
    rng = np.random.default_rng(11)
    n, K = 400, 5
    pb = rng.dirichlet(np.ones(K) * 0.7, size=n)
    action = np.array([rng.choice(K, p=row) for row in pb])
    pscore = pb[np.arange(n), action]
    pe = rng.dirichlet(np.ones(K) * 0.5, size=n)
    mean_reward = rng.uniform(0.1, 0.9, size=(n, K))
    reward = (rng.uniform(size=n) < mean_reward[np.arange(n), action]).astype(float)
    q_hat = np.clip(mean_reward + rng.normal(scale=0.1, size=(n, K)), 0, 1)
    return reward, action, pscore, pe, q_hat


def _stub_torch():
    t = mock.MagicMock()
    t.Tensor = type("Tensor", (), {})
    nn = mock.MagicMock()
    nn.Module = type("Module", (), {})
    data = mock.MagicMock()
    data.Dataset = type("Dataset", (), {})
    sys.modules.update({"torch": t, "torch.nn": nn, "torch.utils.data": data})
    t.nn, t.utils.data = nn, data
    for name in ["torch.optim", "torch.nn.functional", "torch.utils", "torch.distributions"]:
        sys.modules[name] = mock.MagicMock()


def main():
    _stub_torch()
    from obp.ope.estimators import (DirectMethod, DoublyRobust, InverseProbabilityWeighting,
                                    SelfNormalizedInverseProbabilityWeighting)
    reward, action, pscore, pe, q_hat = logged_data()
    kw = dict(reward=reward, action=action, pscore=pscore, action_dist=pe[:, :, None],
              position=np.zeros(len(reward), dtype=int))
    out = {
        "obp": "0.4.1",
        "ips": InverseProbabilityWeighting().estimate_policy_value(**kw),
        "snips": SelfNormalizedInverseProbabilityWeighting().estimate_policy_value(**kw),
        "dr": DoublyRobust().estimate_policy_value(
            **kw, estimated_rewards_by_reg_model=q_hat[:, :, None]),
        "dm": DirectMethod().estimate_policy_value(
            action_dist=pe[:, :, None], position=kw["position"],
            estimated_rewards_by_reg_model=q_hat[:, :, None]),
    }
    json.dump({k: (float(v) if not isinstance(v, str) else v) for k, v in out.items()},
              sys.stdout)


if __name__ == "__main__":
    main()
