"""The one input layer: static options, labels, probabilities and the raise-or-flag rule.

Every family checks its inputs with these functions, so a rule has one
wording and one implementation:

* static options (Python values, also under ``jit``): :func:`confidence_level`,
  :func:`positive_int` (``k``, ``n_bins``, ``num_classes``), :func:`choice`
  (``average``, ``method``), :func:`zero_division`;
* concrete-or-traced values: :func:`fail_if` raises ``ValueError`` naming the
  argument and the rule when values are concrete, and returns a boolean flag
  (callers turn the result into NaN) when traced; :func:`warn_if` warns
  eagerly.  Under :mod:`calipers._core.compile` both are collected from the
  compiled program and raised / issued after it, in call order, so a compiled
  eager call raises and warns exactly as the plain eager call;
* labels: :func:`encode_labels` (eager, any sortable labels, scikit-learn's
  encoding) and :func:`binary_labels` (0/1 labels, jit-safe);
* probabilities: :func:`check_probabilities`, one tolerance for rows that
  must sum to one (:func:`prob_sum_tolerance`), used by the metrics and the
  command-line reader alike.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import threading
import warnings
from typing import Any, Callable, TypeVar, cast

import numpy as np

from . import xp as B

# internal layer (like _backend): no __all__, nothing here is public API

_F = TypeVar("_F", bound=Callable[..., Any])


# --------------------------------------------------------------------------
# static options
# --------------------------------------------------------------------------

def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def confidence_level(value, name: str = "confidence_level") -> float:
    """A real number strictly between 0 and 1 (Python or NumPy scalar); returned as float."""
    if B.is_array(value) and getattr(value, "ndim", 1) == 0 and not B.is_traced(value) \
            and not isinstance(value, (bool, np.bool_)):
        value = value.item() if hasattr(value, "item") else value
    if not _is_real(value) or not (0 < float(value) < 1):
        raise ValueError(f"{name} must be a real number in (0, 1), got {value!r}")
    return float(value)


def positive_int(value, name: str, minimum: int = 1) -> int:
    """An integer (Python or NumPy, not bool) ``>= minimum``; returned as int."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def choice(value, name: str, allowed, *, message: str | None = None):
    """``value`` if it is one of ``allowed``, else a ``ValueError`` listing them.

    ``message`` replaces the default wording where a peer's words are kept on purpose
    (scikit-learn's, for its option names)."""
    if not any(value is a or (type(value) is type(a) and value == a) for a in allowed):
        raise ValueError(message or f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


def check_real_values(name: str, x, xp, what: str = "numeric values") -> None:
    """A numeric array that is not boolean: ``x`` must hold ``what`` (scores, times, counts).

    The one rule for arguments where ``True`` / ``False`` would be read as 1 / 0 silently."""
    B.check_numeric(name, x, xp)
    if xp.isdtype(x.dtype, "bool"):
        raise ValueError(f"{name} must be {what}, not booleans")


def zero_division(value):
    """``(value, warn)`` for a ``zero_division`` option: "warn" (0, warning), "nan", 0, 1 or NaN."""
    msg = f'zero_division must be "nan", "warn", 0, 1 or NaN, got {value!r}'
    if isinstance(value, str):
        if value == "nan":
            return math.nan, True
        if value == "warn":
            return 0.0, True
        raise ValueError(msg)
    if not _is_real(value):
        raise ValueError(msg)
    v = float(value)
    if math.isnan(v):
        return math.nan, False
    if v not in (0.0, 1.0):
        raise ValueError(msg)
    return v, False


def keyword_aliases(param: str, *, current: tuple[str, ...] = (),
                    deprecated: tuple[str, ...] = ()) -> Callable[[_F], _F]:
    """Decorator: scikit-learn's keyword names for the argument calipers calls ``param``.

    ``current`` names (``y_proba`` for ``y_prob``) are plain synonyms;
    ``deprecated`` ones (scikit-learn's older ``y_pred`` of ``log_loss``) give a
    ``FutureWarning`` as scikit-learn does.  Two names for one argument raise
    ``ValueError``.  The signature shown stays calipers' own.
    """
    names = tuple(current) + tuple(deprecated)

    def decorate(fn: _F) -> _F:
        position = list(inspect.signature(fn).parameters).index(param)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            given = [n for n in names if n in kwargs]
            if given:
                have = [n for n in given if kwargs[n] is not None or n in current]
                if param in kwargs or len(args) > position:
                    have = [param] + have
                if len(have) > 1:
                    old = [n for n in have if n in deprecated]
                    if old:
                        raise ValueError(f"Cannot use both `{old[0]}` and `{have[0]}`. "
                                         f"`{old[0]}` is deprecated, pass `{param}` (or "
                                         "scikit-learn's `y_proba`) only.")
                    raise ValueError(f"{fn.__name__}: {' and '.join(have)} name the same "
                                     "argument; pass one of them")
                name = given[0]
                if name in deprecated:
                    warnings.warn(f"`{name}` was renamed to `y_proba` in version 1.9 and will "
                                  f"be removed (scikit-learn's deprecation); calipers reads it "
                                  f"as `{param}`", FutureWarning, stacklevel=2)
                kwargs[param] = kwargs.pop(name)
            return fn(*args, **kwargs)

        return cast(_F, wrapper)

    return decorate


# --------------------------------------------------------------------------
# raise eagerly / flag under jit
# --------------------------------------------------------------------------

_local = threading.local()


def _collector():
    return getattr(_local, "stack", None)


class collect:
    """Context manager used by :mod:`calipers._core.compile` while tracing a public function.

    Inside it, traced :func:`fail_if` / :func:`warn_if` calls record
    ``(kind, flag, index, value, message)`` entries that the compiled program
    returns, so the caller can raise or warn after it on concrete values.
    """

    def __enter__(self):
        self.entries = []
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self.entries)
        return self.entries

    def __exit__(self, *exc):
        _local.stack.pop()
        return False


def _first(bad, xp):
    flat = xp.reshape(bad, (-1,))
    return xp.argmax(xp.astype(flat, B.acc_int(xp)))


def fail_if(bad, name: str, rule: str, xp, *, values=None, what="element", message=None):
    """Raise eagerly / flag under ``jit`` when any element of ``bad`` is True.

    Concrete ``bad``: ``ValueError("{name} {rule}; element i is v")`` for the
    first True element (``v`` read from ``values``; without ``values`` the
    message is ``"{name} {rule}"``), otherwise returns a False flag.  Traced:
    returns ``any(bad)`` (a 0-d bool the caller turns into NaN), recorded for
    :mod:`calipers._core.compile` to raise after a compiled eager call.
    ``message(index, value)``, optional, writes the whole message instead
    (``index`` an int or a tuple for n-D ``bad``, ``value`` a Python scalar).
    """
    if not B.is_traced(bad):
        if bool(xp.any(bad)):
            if message is not None:
                i, v = _locate(bad, values)
                raise ValueError(message(i, v))
            raise ValueError(_message(name, rule, bad, values, what=what))
        return xp.asarray(False)
    flag = xp.any(bad)
    entries = _collector()
    if entries:
        i = _first(bad, xp) if getattr(bad, "ndim", 0) else None
        v = None if values is None or i is None else xp.reshape(values, (-1,))[i]
        entries[-1].append(("error", flag, i, v, (name, rule, tuple(getattr(bad, "shape", ())),
                                                  values is not None, what, message)))
    return flag


def check_finite(name: str, x, xp):
    """NaN/inf in ``x``: ``ValueError`` naming the element when concrete; the flag when traced.

    Returns the 0-d invalid flag (always False when concrete).
    """
    if not xp.isdtype(x.dtype, "real floating"):
        return xp.asarray(False)
    if x.ndim <= 1:
        return fail_if(~xp.isfinite(x), name, "must be finite (no NaN or inf)", xp, values=x)
    return fail_if(~xp.isfinite(x), name, "", xp, values=x,
                   message=lambda i, v: f"{name} must be finite (no NaN or inf); entry {i} is {v}")


def check_interval_bounds(lower, upper, xp, *, names=("lower", "upper")):
    """Paired interval bounds: no NaN in either, and ``upper >= lower`` element by element.

    The one rule for every function that takes ``lower`` / ``upper`` arrays
    (+-inf allowed): an interval with ``lower > upper`` is empty, so swapped
    bounds are a caller error, never an interval that covers nothing (the
    bug of MAPIE issue 547). Raises eagerly naming the argument and the
    element; returns the 0-d invalid flag under ``jit``.
    """
    lo_name, hi_name = names
    acc = B.acc_float(xp)
    lo, hi = xp.astype(lower, acc), xp.astype(upper, acc)
    invalid = fail_if(xp.isnan(lo), lo_name, "must not contain NaN", xp, values=lo)
    invalid = invalid | fail_if(xp.isnan(hi), hi_name, "must not contain NaN", xp, values=hi)

    def message(i, v):  # i, v only: under the compile policy it runs after the program
        return (f"{hi_name} must be >= {lo_name} element by element ({hi_name} >= {lo_name}; "
                f"an interval with {lo_name} > {hi_name} is empty): element {i} of "
                f"{hi_name} is {v!r}, below its {lo_name} bound")

    return invalid | fail_if(hi < lo, hi_name, "", xp, values=hi, message=message)


def check_weights(name: str, w, xp, *, positive_sum: bool = False):
    """Numeric, finite, non-negative weights whose integer sum fits the dtype.

    ``positive_sum``: the weights must not all be 0 (a weighted mean needs a
    positive total). Raises eagerly (naming ``name``); returns the 0-d invalid
    flag under ``jit``.
    """
    mask = xp.isdtype(w.dtype, "bool")    # 0/1 integer weights (a mask keeps its rows)
    invalid = xp.asarray(False)
    if not mask:
        B.check_numeric(name, w, xp)
        invalid = check_finite(name, w, xp)
        invalid = invalid | fail_if(w < 0, name, "must be non-negative", xp, values=w)
        B.check_int_sum(name, w, xp)
    if positive_sum:
        invalid = invalid | fail_if(~xp.any(w if mask else w > 0), name,
                                    "must have a positive sum", xp)
    return invalid


def _locate(bad, values, index=None, value=None):
    """(index as int or tuple, value as a Python scalar or None) of the first True of ``bad``."""
    shape = tuple(getattr(bad, "shape", ()))
    if index is None:
        index = int(np.argmax(B.to_numpy(bad).reshape(-1)))
        if values is not None:
            value = B.to_numpy(values).reshape(-1)[index]
    where = index if len(shape) <= 1 else tuple(int(j) for j in np.unravel_index(index, shape))
    return where, (value.item() if hasattr(value, "item") else value)


def eager_only() -> None:
    """Inside the compile policy's trace, give the call back to the plain eager function.

    For rules that need concrete values and have no static-shape form (for
    example classes inferred from the data); under the user's own ``jit`` this
    does nothing and the caller takes its documented ``jit`` path.
    """
    if _collector():
        raise _NeedsEager()


class _NeedsEager(Exception):
    pass


def _message(name, rule, bad, values, index=None, value=None, what="element"):
    if getattr(bad, "ndim", 0) == 0 and index is None:
        return f"{name} {rule}"
    if index is None:
        flat = B.to_numpy(bad).reshape(-1)
        index = int(np.argmax(flat))
        shape = tuple(bad.shape)
        if values is not None:
            value = B.to_numpy(values).reshape(-1)[index]
    else:
        shape = bad
    where = index if len(shape) <= 1 else tuple(int(j) for j in np.unravel_index(index, shape))
    if values is None:
        return f"{name} {rule}; {what} {where} breaks it"
    return f"{name} {rule}; {what} {where} is {B.show(value)}"


def warn_if(cond, message, xp, category=None, *, values=None) -> None:
    """Warn (``UndefinedMetricWarning`` by default) when the 0-d ``cond`` is True.

    Eagerly the warning is issued at once and points at the caller's line;
    inside the compile policy's trace (traced or concrete ``cond``) it is
    recorded for :mod:`calipers._core.compile` (plain ``jit`` users
    get no warning: the NaN is the signal).  ``message`` may be a callable of
    the concrete ``values`` (a NumPy array or scalar) for counts in the text.
    """
    from .exceptions import UndefinedMetricWarning

    category = category or UndefinedMetricWarning
    entries = _collector()
    if not B.is_traced(cond) and not entries:
        if bool(xp.any(cond)):
            B.warn(message(B.to_numpy(values)) if callable(message) else message, category)
        return
    # while the compile policy traces, a concrete condition (a static option's
    # warning) is recorded too: issued now, it would be lost on every cache hit
    if entries:
        entries[-1].append(("warning", xp.any(cond), None, values, (message, category)))


def replay(entries, concrete) -> None:
    """Raise / warn for the recorded entries whose flags came back True (in call order)."""
    for (kind, _, _, _, info), (flag, index, value) in zip(entries, concrete):
        if not bool(flag):
            continue
        if kind == "error":
            name, rule, shape, has_values, what, message = info
            if message is not None:
                where = None if index is None else (
                    int(index) if len(shape) <= 1 else
                    tuple(int(j) for j in np.unravel_index(int(index), shape)))
                v = None if value is None else np.asarray(value).item()
                raise ValueError(message(where, v))
            if index is None:
                raise ValueError(f"{name} {rule}")
            raise ValueError(_message(name, rule, shape, True if has_values else None,
                                      index=int(index), value=value, what=what))
        message, category = info
        B.warn(message(np.asarray(value)) if callable(message) else message, category)


# --------------------------------------------------------------------------
# shapes and lengths (calipers' rule, with scikit-learn's words in the message)
# --------------------------------------------------------------------------

def column_or_1d(x):
    """A label or score array of shape (n, 1) as 1-D (n,); anything else unchanged.

    scikit-learn's ``column_or_1d`` (as its metrics call it: silently) takes a
    single column for a 1-D target, and ``type_of_target`` never reads an
    (n, 1) array as multilabel; calipers does the same.  The shape is static,
    so this also holds under ``jit``.  Called on the raw argument (list,
    NumPy, JAX or array-api array) before the arrays are converted.
    """
    if x is None or isinstance(x, (str, bytes)):
        return x
    shape = getattr(x, "shape", None)
    if shape is None:
        try:
            shape = np.shape(x)
        except ValueError:  # ragged lists: the array conversion reports them
            return x
    if len(shape) == 2 and shape[1] == 1:
        return x[:, 0] if B.is_array(x) else np.asarray(x)[:, 0]
    return x


# The shape checks live in the backend layer (used below it too); one copy, scikit-learn's words.
check_1d = B.check_1d
check_same_length = B.check_same_length


def check_indicator(name: str, Y, xp, *, ranking=False):
    """A 2-D label array must be a 0/1 (or boolean) indicator matrix (multilabel).

    Concrete values outside {0, 1} raise ``ValueError`` with scikit-learn's
    words ("multiclass-multioutput is not supported"; its ranking metrics say
    "multiclass-multioutput format is not supported", ``ranking=True``);
    under ``jit`` the returned 0-d flag is True instead.
    """
    if xp.isdtype(Y.dtype, "bool"):
        return xp.asarray(False)
    kind = "multiclass-multioutput format" if ranking else "multiclass-multioutput"

    def message(i, v):
        return (f"{name} must be a 0/1 indicator matrix (multilabel) when 2-D; entry {i} is "
                f"{v!r}: {kind} is not supported")

    return fail_if((Y != 0) & (Y != 1), name, "", xp, values=Y, message=message)


def multiclass_scores_message(score_shape, n_classes) -> str:
    """The error for 1-D scores with a multiclass ``y_true`` (scikit-learn's words first)."""
    return ("`y_score` needs to be of shape `(n_samples, n_classes)`, since `y_true` contains "
            f"multiple classes. Got `y_score.shape={tuple(score_shape)}`: y_true has "
            f"{n_classes} classes, so y_score needs one column per class")


def check_binary_for_1d_scores(y_true, y_score, pos_label=None, *, note="") -> None:
    """Eagerly, 1-D ``y_score`` with more than two classes in 1-D ``y_true`` raises.

    Without ``pos_label`` the binary rule would refuse the labels anyway; this
    says what the caller most likely meant (one score column per class), in
    scikit-learn's words.  Numeric labels within [-1, 1] take a two-reduction fast path.
    """
    if pos_label is not None or B.is_traced(y_true) or np.ndim(y_score) != 1 \
            or np.ndim(y_true) != 1:
        return
    y = np.asarray(B.to_numpy(y_true) if B.is_array(y_true) else y_true)
    if y.size == 0 or y.dtype.kind == "b":
        return
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        return  # NaN / inf labels: the binary rule names the element
    if y.dtype.kind in "iuf" and y.min() >= -1 and y.max() <= 1:
        return  # at most the binary codes (anything else there the binary rule reports)
    try:
        u = np.unique(y)
    except TypeError:  # mixed kinds: the label encoding reports them
        return
    if u.shape[0] > 2:
        # a stray label in binary data looks the same: say both readings
        shown = ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in u[:5]) + \
            (", ..." if u.shape[0] > 5 else "")
        raise ValueError(multiclass_scores_message(np.shape(y_score), u.shape[0]) + note +
                         f". For binary scores y_true must hold two classes (0/1, or any two "
                         f"with pos_label); it holds {shown}")


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------

def host_labels(x, name):
    """A static label list as a 1-D NumPy array (never traced)."""
    if B.is_traced(x):
        raise ValueError(f"{name} must be concrete (a list or a NumPy array), not a traced array")
    arr = np.asarray(B.to_numpy(x) if B.is_array(x) else x)
    if arr.ndim != 1 or arr.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-D list of labels, got shape {arr.shape}")
    if unique_labels(arr, name).shape[0] != arr.shape[0]:
        raise ValueError(f"Parameter '{name}' must be unique (no duplicates), got {arr.tolist()}")
    return arr


def check_ordered_labels(lab, name="labels"):
    """Refuse column labels that are not in sorted order (scikit-learn's rule).

    Where ``labels`` names the columns of a score matrix, the columns follow
    the sorted labels, as a classifier's ``predict_proba`` orders its classes
    (``classes_`` is sorted). An unsorted list is therefore either a typo or a
    score matrix whose columns do not match the labels: both are refused,
    never read in the given order. (``log_loss`` and ``brier_score_loss``
    follow scikit-learn there too: a warning, and the sorted order.)
    """
    srt = np.sort(lab)
    if not np.array_equal(srt, lab):
        raise ValueError(f"Parameter '{name}' must be ordered: the columns of y_score follow "
                         f"the sorted labels, got {lab.tolist()}; pass {name}="
                         f"{srt.tolist()} with the score columns in that order")
    return lab


def densify(x):
    """A SciPy sparse matrix/array (scikit-learn's multilabel input) as a dense NumPy array."""
    if hasattr(x, "toarray") and hasattr(x, "nnz"):
        return np.asarray(x.toarray())
    return x


def is_text(x) -> bool:
    """True for label arrays/lists that are not numeric (strings, bytes, objects)."""
    if x is None or B.is_traced(x):
        return False
    if B.is_array(x) and not isinstance(x, np.ndarray):
        return False  # JAX / array-api arrays are numeric by construction
    try:
        kind = np.asarray(x).dtype.kind
    except Exception:  # ragged input: let the array conversion report it
        return False
    return kind in "USOa"


def encode_labels(y, *others, labels=None, names=("y_true",), infer_from=1):
    """Encode labels of any sortable dtype as scikit-learn does (eager, NumPy).

    Classes are ``labels`` (in the order given) when given, else the sorted
    distinct values of the first ``infer_from`` arrays (``y_true`` alone by
    default; 2 for ``y_true`` and ``y_pred`` together).  Returns
    ``(classes, codes)``: ``classes`` a NumPy array, ``codes`` one int64
    array per input with each element's index in ``classes``.  A value not in
    ``classes`` raises ``ValueError`` naming its array.  Under ``jit`` labels
    are integers and the number of classes is static: use the integer paths.
    """
    arrays = [np.asarray(B.to_numpy(a) if B.is_array(a) else a) for a in (y, *others)]
    names = tuple(names) + tuple(f"argument {i}" for i in range(len(names), len(arrays)))
    if labels is not None:
        classes = host_labels(labels, "labels")
    else:
        pool = [a.reshape(-1) for a in arrays[:infer_from]]
        for name, a in zip(names, pool):
            if a.dtype.kind == "O":
                unique_labels(a, name)     # None, or two kinds in one array: named here
        try:
            classes = np.unique(np.concatenate(pool))
        except TypeError as exc:  # mixed str / int
            raise ValueError(f"labels in {', '.join(names[:infer_from])} must be of one "
                             f"sortable type: {exc}") from exc
    order = np.argsort(classes, kind="stable")
    sc = classes[order]
    codes = []
    for name, a in zip(names, arrays):
        try:
            pos = np.clip(np.searchsorted(sc, a), 0, len(sc) - 1)
            ok = sc[pos] == a
        except TypeError as exc:
            raise ValueError(f"{name} labels cannot be compared with {sc.tolist()}: {exc}") from exc
        if not np.all(ok):
            i = int(np.argmax(~np.asarray(ok).reshape(-1)))
            shown = B.show(a.reshape(-1)[i])
            if labels is None:
                raise ValueError(f"{name} element {i} is {shown}, which is not among the "
                                 f"classes of {', '.join(names[:infer_from])}: "
                                 f"{classes.tolist()}")
            missing = set(np.asarray(a).reshape(-1)[~np.asarray(ok).reshape(-1)].tolist())
            # both of scikit-learn's wordings (ranking; log loss) before calipers' own
            raise ValueError(f"'{name}' contains labels not in parameter 'labels': {name} "
                             f"contains values {missing} not belonging to the passed labels "
                             f"{classes.tolist()}. (element {i} is {shown})")
        codes.append(order[pos].astype(np.int64))
    return classes, codes


def unique_labels(y, name):
    """``np.unique`` of a NumPy label array, or a ``ValueError`` naming ``name`` and the element.

    An object array holding ``None`` (or labels of two kinds, 1 and "a") has
    no sorted order: NumPy's bare ``TypeError`` becomes a message that says
    which argument and which element.
    """
    try:
        return np.unique(y)
    except TypeError as exc:
        flat = np.asarray(y).reshape(-1).tolist()
        i = next((j for j, v in enumerate(flat) if v is None), None)
        if i is None:
            first = type(flat[0])
            i = next((j for j, v in enumerate(flat) if not isinstance(v, first)), 0)
        raise ValueError(f"{name} labels must be of one sortable type (no None); element {i} "
                         f"is {flat[i]!r} ({exc})") from None


def _indicator(y, xp, name, what):
    """A 0/1 indicator (``event``, not a class label): ``(y01, invalid)``.

    See :func:`binary_labels` (``indicator=``).
    """
    rule = f"must be 0/1 or boolean ({what})" if what else "must be 0/1 or boolean"
    if B.is_numpy(xp) and getattr(y, "dtype", np.dtype(float)).kind in "SUOa":
        flat = np.asarray(y).reshape(-1).tolist()
        bad = next((j for j, v in enumerate(flat) if not isinstance(v, (bool, np.bool_))
                    and not (isinstance(v, (int, np.integer)) and v in (0, 1))), None)
        if bad is not None:
            raise ValueError(f"{name} {rule}; element {bad} is {flat[bad]!r}")
        y = np.asarray(flat, dtype=np.int64).reshape(np.shape(y))
    B.check_numeric(name, y, xp)
    if xp.isdtype(y.dtype, "bool"):
        return xp.astype(y, B.acc_int(xp)), xp.asarray(False, device=B.device(y))
    invalid = check_finite(name, y, xp)
    if B.is_numpy(xp) and xp.isdtype(y.dtype, "integral") and y.size \
            and int(y.min()) >= 0 and int(y.max()) <= 1:
        return y, np.asarray(False)   # fast path: two reductions
    invalid = invalid | fail_if((y != 0) & (y != 1), name, rule, xp, values=y)
    return xp.astype(y == 1, B.acc_int(xp)), invalid


def binary_labels(y_true, xp, *, pos_label=None, name="y_true", multiclass_hint=None,
                  pos_label_hint=True, indicator=None):
    """Validate binary labels and return ``(y01, invalid)``: the one binary-label rule.

    ``y01`` is an integer array of 0/1.  Without ``pos_label`` the labels must
    be in {0, 1} or in {-1, 1} (or bool), and 1 is the positive class
    (scikit-learn's inference); otherwise ``y_true == pos_label`` is the
    positive class (any comparable labels, NumPy strings too).  Concrete input
    that breaks the rule raises ``ValueError`` naming ``name`` (text labels
    without ``pos_label``, more than two classes and the mix {-1, 0} in
    scikit-learn's words); under ``jit`` the returned ``invalid`` flag (0-d
    bool) is True instead and callers turn the result into NaN.  The ranking
    family calls it as ``B.binary_labels``.  ``multiclass_hint`` opens the
    message for more than two classes (the caller's own scikit-learn wording).
    ``pos_label_hint`` False: a caller without ``pos_label`` (the paired
    bootstrap); the messages do not offer it. NaN or inf labels are named as
    such (not counted as classes). Labels without a sorted order (an object
    array holding ``None``) raise ``ValueError`` naming ``name``.

    ``indicator``: the argument is a 0/1 indicator, not a class label (the
    survival functions' ``event``); the string says what 1 and 0 mean. Then
    only {0, 1} and booleans are accepted ({-1, 1} is not an indicator
    coding: -1 would silently read as 0), there is no ``pos_label``, and the
    message is the family's own: ``"event must be 0/1 or boolean (1 = event
    observed, 0 = censored); element 0 is -1"``.
    """
    if indicator is not None:
        return _indicator(y_true, xp, name, indicator)
    unless = " unless pos_label is given" if pos_label_hint else ""
    if pos_label is not None:
        y = xp.astype(y_true == pos_label, B.acc_int(xp))
        return y, xp.asarray(False, device=B.device(y_true))
    if B.is_numpy(xp) and getattr(y_true, "dtype", np.dtype(float)).kind in "SUO":
        classes = unique_labels(y_true, name)
        if classes.dtype.kind == "S" or any(isinstance(c, bytes) for c in classes.tolist()):
            raise TypeError(f"Support for labels represented as bytes is not supported ({name}; "
                            "scikit-learn's rule): decode them or pass pos_label")
        shown = ", ".join(repr(c) for c in classes.tolist()[:10])
        raise ValueError(f"{name} takes value in {{{shown}}} and pos_label is not specified: "
                         "either make y_true take value in {0, 1} or {-1, 1}" +
                         (" or pass pos_label explicitly." if pos_label_hint else "."))
    B.check_numeric(name, y_true, xp)
    invalid = check_finite(name, y_true, xp)
    if xp.isdtype(y_true.dtype, "bool"):
        return xp.astype(y_true, B.acc_int(xp)), xp.asarray(False, device=B.device(y_true))
    if B.is_numpy(xp) and xp.isdtype(y_true.dtype, "integral") and y_true.size:
        # fast path: two reductions instead of an elementwise test
        if int(y_true.min()) >= 0 and int(y_true.max()) <= 1:
            return y_true, np.asarray(False)
    if not B.is_traced(y_true) and y_true.size:
        classes = np.unique(B.to_numpy(y_true))
        if classes.shape[0] > 2:
            raise ValueError(f"{multiclass_hint + ' ' if multiclass_hint else ''}"
                             f"{name} must contain only 0 and 1 (or -1 and 1, or booleans)"
                             f"{unless}; it has {classes.shape[0]} classes "
                             f"{classes.tolist()[:10]}: multiclass format is not supported")
    bad = (y_true != 0) & (y_true != 1) & (y_true != -1)
    invalid = invalid | fail_if(bad, name, "must contain only 0 and 1 (or -1 and 1, or "
                                f"booleans){unless}", xp, values=y_true)
    # {-1, 0} is not a binary coding scikit-learn infers a positive class for
    mixed = xp.any(y_true == -1) & xp.any(y_true == 0)
    invalid = invalid | fail_if(mixed, name, "must contain only 0 and 1 (or -1 and 1)"
                                f"{unless}; it mixes -1 and 0", xp)
    return xp.astype(y_true == 1, B.acc_int(xp)), invalid


# --------------------------------------------------------------------------
# probabilities
# --------------------------------------------------------------------------

def prob_sum_tolerance(dtype) -> float:
    """How far a row of class probabilities may sum from 1: ``sqrt(eps)`` of its float dtype."""
    return math.sqrt(float(np.finfo(_np_dtype(dtype)).eps))


def check_probabilities(name: str, p, xp, *, rows_sum_to_one=False):
    """Probabilities in [0, 1] (NaN refused); 2-D rows summing to 1 within :func:`prob_sum_tolerance`.

    Raises eagerly, returns the invalid flag under ``jit`` (:func:`fail_if`).
    """
    ok = (p >= 0) & (p <= 1)  # False for NaN
    invalid = fail_if(~ok, name, "must be probabilities in [0, 1]", xp, values=p)
    if rows_sum_to_one and p.ndim == 2:
        acc = B.acc_float(xp)
        tol = prob_sum_tolerance(p.dtype)
        sums = xp.sum(xp.astype(p, acc), axis=1)
        invalid = invalid | fail_if(xp.abs(sums - 1) > tol, f"each row of {name}",
                                    f"must sum to 1 (within {tol:.1e})", xp,
                                    values=sums, what="the sum of row")
    return invalid


def _np_dtype(dt):
    try:
        return np.dtype(dt)
    except TypeError:  # array-api-strict dtype objects
        return np.dtype(str(dt).split(".")[-1].split("'")[0])
