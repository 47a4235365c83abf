"""A collection of named states, fed from one model output and merged as one pytree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterator

from .._core.results import result_type
from .base import OUTPUT_NAMES, MergeableState, Outputs, empty_like, merge

__all__ = ["StateCollection"]


def _freeze(options: Mapping) -> tuple:
    out = []
    for name in sorted(options):
        opts = options[name]
        if not isinstance(opts, Mapping):
            raise ValueError(f"options[{name!r}] must be a mapping of static options, got "
                             f"{opts!r}")
        bad = sorted(set(opts) & set(OUTPUT_NAMES))
        if bad:
            raise ValueError(f"options[{name!r}] names model outputs {bad}: pass those to "
                             "update, not as static options")
        items = tuple(sorted(opts.items()))
        try:
            hash(items)
        except TypeError as exc:
            raise ValueError(f"options[{name!r}] must be hashable static values (numbers, "
                             f"strings, tuples): {exc}") from exc
        out.append((name, items))
    return tuple(out)


@result_type(meta=("options", "names"))
class StateCollection(Mapping):
    """Named states updated from one model output, merged and ``psum``-med as one pytree.

    Make it with :meth:`init`; ``collection["name"]`` is a state. The
    collection is a JAX pytree (the states are its children, the static
    options its metadata), so it can be carried through ``jax.jit``,
    returned from a step, and reduced with ``jax.lax.psum(collection, axis)``
    under ``shard_map``: that sum is the merge, as for a single state.

    Routing: :meth:`update` takes the model's outputs by name (``labels``,
    ``logits`` or ``probs`` or ``scores``, ``preds``, ``mask``,
    ``sample_weight``, ``query_id``, ``token_logprobs``, ``num_bytes``) and
    hands each state what its class declares it takes (``State.takes``):

    * :class:`ConfusionState`: ``labels`` and ``preds`` (else the argmax of
      2-D logits / probs / scores; for 1-D, ``logits >= 0`` or
      ``probs >= 0.5``);
    * :class:`CalibrationState`, :class:`ProbabilityLossState`: ``labels``
      and ``probs`` (else the sigmoid / softmax of ``logits``);
    * :class:`ROCHistogramState`: ``labels`` and ``logits`` as they are
      (the finest key: no sigmoid), else ``scores``, else ``probs``;
    * :class:`QueryMeanState` (3 metrics): a padded ``(Q, L)`` batch,
      ``labels`` graded relevance and ``scores`` (or ``logits``), or flat
      rows of those with ``query_id`` (n,) and ``mask`` (n,), through
      :func:`ranking_batch_metrics` with the state's static options
      (``k``, ``gain``, ``relevance_level``, and ``num_queries`` for flat
      rows under ``jit``: ids ``0 .. num_queries - 1``). Each query must lie
      within one batch (one split over batches counts once per batch);
      the other states ignore ``query_id``;
    * :class:`NLLState`: ``token_logprobs``, else the log-softmax of
      ``logits`` (..., V) at ``labels`` (...).

    ``mask`` (and ``sample_weight``) reach every state; a state that lacks
    an output it takes raises ``ValueError`` naming it and the outputs given.

    Attributes
    ----------
    states : dict of str to state
        The states, by name.
    options : tuple
        Static options per state name, ``((name, ((option, value), ...)), ...)``.
    names : tuple of str
        The state names in the order given to :meth:`init` (static): iteration,
        ``states`` and ``compute`` keep it, also after ``jit`` (whose pytree
        flattening sorts dictionary keys).

    Examples
    --------
    >>> import numpy as np
    >>> from calipers import ConfusionState, ROCHistogramState, StateCollection
    >>> c = StateCollection.init({"cm": ConfusionState.init(2), "roc": ROCHistogramState.init(16)})
    >>> c = c.update(labels=np.array([0, 1, 1, 0]), logits=np.array([-2.0, 1.5, -0.5, 0.25]))
    >>> out = c.compute()
    >>> print(float(out["cm"].accuracy), float(out["roc"].roc_auc))
    0.5 0.75
    """

    states: dict
    options: tuple = ()
    names: tuple = ()

    def __post_init__(self) -> None:
        if not self.names:
            object.__setattr__(self, "names", tuple(self.states))
        elif tuple(self.states) != self.names:
            object.__setattr__(self, "states", {n: self.states[n] for n in self.names})

    @classmethod
    def init(cls, states: Mapping[str, Any], *,
             options: Mapping[str, Mapping[str, Any]] | None = None) -> "StateCollection":
        """A collection of ``states`` (a mapping of names to states, usually empty ones).

        ``options`` maps a state's name to its static options for
        :meth:`update` (``{"ndcg": {"k": 5}}`` for a :class:`QueryMeanState`).
        Raises ``ValueError`` for a value that is not a state, a name that is
        not a string, or options for a name not in ``states``.
        """
        states = dict(states)
        for name, st in states.items():
            if not isinstance(name, str):
                raise ValueError(f"state names must be strings, got {name!r}")
            if not isinstance(st, MergeableState) or not isinstance(st, tuple):
                raise ValueError(f"states[{name!r}] must be a calipers state (a NamedTuple "
                                 f"with update, merge, compute and update_outputs), got "
                                 f"{type(st).__name__}")
        options = dict(options or {})
        unknown = sorted(set(options) - set(states))
        if unknown:
            raise ValueError(f"options for {unknown}, which are not states of this collection "
                             f"({sorted(states)})")
        return cls(states, _freeze(options), tuple(states))

    # the mapping interface ---------------------------------------------------
    def __getitem__(self, name: str) -> Any:
        return self.states[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.states)

    def __len__(self) -> int:
        return len(self.states)

    def _options(self, name: str) -> dict:
        return dict(dict(self.options).get(name, ()))

    # the protocol ------------------------------------------------------------
    def update(self, **outputs: Any) -> "StateCollection":
        """Every state updated from one model output (keywords as the class notes).

        The derived views (softmax of the logits, argmax predictions) are
        computed once and shared. Works eagerly and inside ``jit`` /
        ``shard_map``; returns a new collection.
        """
        out = Outputs(**outputs)
        new = {name: type(st)._from_outputs(st, out, **self._options(name))
               for name, st in self.states.items()}
        return type(self)(new, self.options, self.names)

    def merge(self, other: "StateCollection") -> "StateCollection":
        """State-wise merge (what ``psum`` of two collections' fields does, with the
        integer limits checked). The two must hold the same names and options."""
        if not isinstance(other, StateCollection) or set(other.states) != set(self.states):
            raise ValueError("cannot merge collections with different states: "
                             f"{sorted(self.states)} and "
                             f"{sorted(getattr(other, 'states', {}))}")
        if other.options != self.options:
            raise ValueError("cannot merge collections with different static options")
        return type(self)({n: merge(st, other.states[n]) for n, st in self.states.items()},
                          self.options, self.names)

    def compute(self) -> dict[str, Any]:
        """``{name: state.compute()}`` (each state's own summary)."""
        return {name: st.compute() for name, st in self.states.items()}

    def empty(self) -> "StateCollection":
        """The same collection with every state emptied (a reset)."""
        return type(self)({n: empty_like(st) for n, st in self.states.items()}, self.options,
                          self.names)
