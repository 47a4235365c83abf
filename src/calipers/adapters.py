"""Thin adapters: any calipers state or :class:`calipers.StateCollection` as a Flax NNX
metric or a CLU metric.

The adapters hold the calipers state and forward to it: ``update`` feeds the
model's outputs (``labels``, ``logits`` / ``probs`` / ``scores``, ``mask``,
...) through the state's routing (:meth:`calipers.StateCollection.update`,
``State.update_outputs``), merging is the state's ``merge`` (integer counts,
checked limits), and ``compute`` returns the state's own summary. Both run
inside ``jax.jit`` / ``nnx.jit``; the state must be a JAX state
(``init(..., xp=jax.numpy)``, or an empty NumPy state, which takes JAX from its
first batch).

flax and clu are imported only when an adapter is made (the ``flax`` extra:
``pip install 'calipers[flax]'``), so ``import calipers`` never imports them.
"""

from __future__ import annotations

import functools
from typing import Any

from ._streaming.base import OUTPUT_NAMES, empty_like
from ._streaming.collection import StateCollection

__all__ = ["nnx_metric", "clu_metric"]


def _check_state(state: Any, who: str, options: dict) -> None:
    if isinstance(state, StateCollection):
        if options:
            raise ValueError(f"{who}: a StateCollection holds its own static options; pass "
                             f"{sorted(options)} as StateCollection.init(..., options="
                             "{name: {...}}), not to the adapter")
        return
    if not (isinstance(state, tuple) and hasattr(state, "update_outputs")
            and hasattr(state, "compute")):
        raise ValueError(f"{who} wraps a calipers state or StateCollection, got "
                         f"{type(state).__name__}")


def _feed(state: Any, options: dict, outputs: dict) -> Any:
    """``state`` updated from the model outputs it can read; other keywords are ignored
    (an NNX ``MultiMetric`` or CLU ``Collection`` hands every metric every output)."""
    known = {k: v for k, v in outputs.items() if k in OUTPUT_NAMES}
    if isinstance(state, StateCollection):
        return state.update(**known)
    return state.update_outputs(**known, **options)


def _empty(state: Any) -> Any:
    return state.empty() if isinstance(state, StateCollection) else empty_like(state)


def _import(what: str):
    try:
        if what == "nnx":
            from flax import nnx
            return nnx
        import clu.metrics
        return clu.metrics
    except ImportError as exc:  # pragma: no cover - the flax extra is in the test set-up
        raise ImportError(f"calipers.adapters.{what}_metric needs flax"
                          f"{' and clu' if what == 'clu' else ''}: pip install "
                          "'calipers[flax]'") from exc


def _get(var: Any) -> Any:
    """A Flax variable's value (``get_value`` since flax 0.12, ``.value`` before)."""
    return var.get_value() if hasattr(var, "get_value") else var.value


def _set(var: Any, value: Any) -> None:
    if hasattr(var, "set_value"):
        var.set_value(value)
    else:
        var.value = value


@functools.lru_cache(maxsize=None)
def _nnx_class():
    nnx = _import("nnx")

    class CalipersNNXMetric(nnx.metrics.Metric):
        """A calipers state as a ``flax.nnx.metrics.Metric`` (in place, as NNX metrics are)."""

        def __init__(self, state: Any, **options: Any) -> None:
            self.options = dict(options)
            self.state = nnx.metrics.MetricState(state)

        def reset(self) -> None:
            _set(self.state, _empty(_get(self.state)))

        def update(self, **outputs: Any) -> None:
            _set(self.state, _feed(_get(self.state), self.options, outputs))

        def merge(self, other: Any) -> None:
            """Add another wrapper's state (or a state) into this one."""
            st = _get(other.state) if isinstance(other, CalipersNNXMetric) else other
            _set(self.state, _get(self.state).merge(st))

        def compute(self) -> Any:
            return _get(self.state).compute()

    return CalipersNNXMetric


def nnx_metric(state: Any, **options: Any) -> Any:
    """A ``flax.nnx.metrics.Metric`` that holds ``state`` (a calipers state or collection).

    ``metric.update(labels=..., logits=..., mask=...)`` updates it in place
    (keywords it cannot read are ignored, so it sits in an
    ``nnx.MultiMetric`` beside NNX's own metrics); ``metric.compute()`` is the
    state's summary; ``metric.reset()`` empties it; ``metric.merge(other)``
    adds another one. ``options`` are the state's static routing options
    (``k=5`` for a :class:`calipers.QueryMeanState`). The current state is
    ``metric.state.get_value()``: a pytree, so ``jax.lax.psum`` reduces it.
    Raises ``ValueError`` for something that is not a state, or for ``options`` beside
    a collection (which holds its own), ``ImportError``
    without flax.
    """
    _check_state(state, "nnx_metric", options)
    return _nnx_class()(state, **options)


def clu_metric(state: Any, **options: Any) -> type:
    """A ``clu.metrics.Metric`` class for ``state`` (a calipers state or collection).

    ``state`` is the empty state the class starts from (``empty()``);
    ``from_model_output(labels=..., logits=..., mask=...)`` feeds it one batch
    (other keywords are ignored, so the class can be a field of a
    ``clu.metrics.Collection``), ``merge`` is the state's merge, ``reduce``
    (CLU's default) merges along a leading device axis, and ``compute``
    returns the state's summary. ``options`` are the state's static routing
    options. Raises ``ValueError`` for something that is not a state,
    ``ImportError`` without clu.
    """
    _check_state(state, "clu_metric", options)
    cm = _import("clu")
    import flax.struct

    start = _empty(state)
    opts = dict(options)

    @flax.struct.dataclass
    class CalipersCLUMetric(cm.Metric):  # type: ignore[name-defined]
        """A calipers state as a ``clu.metrics.Metric``."""

        state: Any

        @classmethod
        def empty(cls) -> Any:
            return cls(state=start)

        @classmethod
        def from_model_output(cls, **outputs: Any) -> Any:
            return cls(state=_feed(start, opts, outputs))

        def merge(self, other: Any) -> Any:
            return type(self)(state=self.state.merge(other.state))

        def compute(self) -> Any:
            return self.state.compute()

    CalipersCLUMetric.__name__ = CalipersCLUMetric.__qualname__ = \
        f"CLU{type(state).__name__}"
    return CalipersCLUMetric
