"""The conformance suite: the contracts every public metric function keeps (SPEC, "Contracts").

One test per (registry entry, check, backend). Checks and the backends they run on:

- ``agreement``: the value on every backend equals NumPy's (1e-12 float64, 1e-6 float32);
- ``jit``: ``jax.jit`` equals eager, and a second call with the same shapes does not recompile;
- ``row_order`` / ``tie_order``: permuting rows, or only rows inside tie groups, changes nothing;
- ``weights``: integer ``sample_weight`` equals repeating rows;
- ``bad_weights``: a negative or non-finite ``sample_weight`` raises ``ValueError`` naming it
  eagerly, NaN under jit;
- ``invalid``: invalid values raise ``ValueError`` naming the argument eagerly, NaN under jit;
- ``undefined``: undefined input is NaN with ``UndefinedMetricWarning`` pointing at this file;
- ``mixed_namespaces``: NumPy labels with JAX (or torch) scores, eagerly and under jit;
- ``pytree``: the result flattens to arrays (``tree_leaves``) and ``jax.jit`` can return it;
- ``float16``: float16 inputs give float32-accurate results in at least float32;
- ``bfloat16``: NumPy ``bfloat16`` arrays (ml_dtypes', what ``np.asarray`` of a JAX bfloat16
  array gives) and JAX bfloat16 arrays give float32-accurate results in at least float32;
- ``symmetric``: ``f(a, b) == f(b, a)`` where the entry says so;
- ``none_label``: a 1-D object label array holding ``None`` raises ``ValueError`` naming the
  label argument (NumPy's bare ``TypeError`` from sorting, or a silent label, before);
- ``bounds``: for an entry with ``bounds``, perfect and reversed predictions (``extremes``) give
  values inside the bounds (float rounding of weighted sums included);
- ``compiled``: the compiled passes (:mod:`calipers._kernels.native`), the same with the
  per-score table tried on every input, and the NumPy passes alone give the same values.

A check that fails on today's code is listed in ``KNOWN_FAILURES`` with the reason and runs as a
strict xfail: when a fix lands it XPASSes, which fails, and the line must be deleted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import warnings

import array_api_strict
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import calipers
from calipers import UndefinedMetricWarning
from calipers._kernels import native, rankstats
from conftest import load_case
from registry import ALIASES, ENTRIES, EXEMPT, N, REGISTRY, public_callables

try:
    import torch
except ImportError:  # the torch extra is optional
    torch = None

X64_BACKENDS = ["numpy", "array_api_strict", "jax_eager", "jax_jit", "torch"]
CHECKS = {
    "agreement": ["array_api_strict", "jax_eager", "jax_jit", "jax_jit_x32", "torch"],
    "jit": ["jax_jit", "jax_jit_x32"],
    "row_order": ["numpy", "jax_jit"],
    "tie_order": ["numpy", "jax_jit"],
    "weights": ["numpy", "array_api_strict"],
    "bad_weights": ["numpy", "jax_eager", "jax_jit"],
    "invalid": ["numpy", "jax_eager", "jax_jit"],
    "undefined": ["numpy", "jax_eager", "jax_jit"],
    "mixed_namespaces": ["jax_eager", "jax_jit", "torch"],
    "pytree": ["jax"],
    "float16": ["numpy", "jax_eager"],
    "bfloat16": ["numpy", "jax_eager"],
    "symmetric": ["numpy"],
    "bounds": ["numpy", "jax_eager", "jax_jit_x32"],
    "none_label": ["numpy"],
    "explicit_mesh": ["jax_jit"],
    "compiled": ["numpy"],
}

# (entry, "check/backend") -> why it fails today. Delete a line when its test XPASSes.
KNOWN_FAILURES: dict[tuple[str, str], str] = {
}


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------

def applies(entry, check, backend):
    if f"{check}/{backend}" in entry.not_on:
        return False
    jit_backend = backend.startswith("jax_jit") or check == "jit"
    if jit_backend and entry.jit is not True:
        return False
    if check in ("row_order", "tie_order") and entry.rows is not True:
        return False
    if check == "tie_order" and entry.ties is None:
        return False
    if check == "weights" and entry.weights is None:
        return False
    if check == "bad_weights" and entry.weights != "repeat":
        return False
    if check == "invalid" and not entry.invalid:
        return False
    if check == "undefined" and entry.undefined is None:
        return False
    if check == "mixed_namespaces" and entry.labels is None:
        return False
    if check in ("float16", "bfloat16") and not entry.float16:
        return False
    if check == "symmetric" and not entry.symmetric:
        return False
    if check == "bounds" and entry.bounds is None:
        return False
    if check == "none_label" and (entry.labels is None or np.ndim(
            entry.gen(np.random.default_rng(0), N)[0][entry.labels]) != 1):
        return False
    return True


def _params():
    out = []
    for e in ENTRIES:
        for check, backends in CHECKS.items():
            for b in backends:
                if not applies(e, check, b):
                    continue
                key = (e.name, f"{check}/{b}")
                marks = ([pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[key])]
                         if key in KNOWN_FAILURES else [])
                out.append(pytest.param(e.name, check, b, id=f"{e.name}-{check}-{b}",
                                        marks=marks))
    return out


PARAMS = _params()


@contextlib.contextmanager
def context(backend):
    if backend == "torch" and torch is None:
        pytest.skip("torch is not installed (the torch extra)")
    with contextlib.ExitStack() as stack:
        if backend == "array_api_strict":
            stack.enter_context(array_api_strict.ArrayAPIStrictFlags(
                boolean_indexing=False, data_dependent_shapes=False))
        if backend == "jax_jit_x32":
            stack.enter_context(jax.enable_x64(False))
        yield


def convert(backend, a):
    if not isinstance(a, np.ndarray):
        return a
    if backend == "numpy":
        return a
    if backend == "array_api_strict":
        return array_api_strict.asarray(a)
    if backend == "torch":
        return torch.asarray(a)
    if backend == "jax_jit_x32":
        a = a.astype({"f": np.float32, "i": np.int32}.get(a.dtype.kind, a.dtype)) \
            if a.dtype.itemsize == 8 else a
    return jnp.asarray(a)


_JITS = {}


def jitted(entry, kw_names, x64):
    """One jitted function per (entry, keyword arrays, x64): checks with equal shapes share it."""
    key = (entry.name, kw_names, x64)
    if key not in _JITS:
        def f(*arrays):
            n_pos = len(arrays) - len(kw_names)
            return entry.fn(*arrays[:n_pos], **dict(zip(kw_names, arrays[n_pos:])),
                            **entry.options)
        _JITS[key] = jax.jit(f)
    return _JITS[key]


def run(entry, backend, args, kw):
    args = [convert(backend, a) for a in args]
    kw = {k: convert(backend, v) for k, v in kw.items()}
    if backend.startswith("jax_jit"):
        names = tuple(sorted(kw))
        return jitted(entry, names, backend == "jax_jit")(*args, *[kw[k] for k in names])
    return entry.fn(*args, **kw, **entry.options)


def raw_leaves(x):
    """Arrays and numbers of a result, in field order; strings and None left out.

    Walks dataclasses and tuples itself, so values are compared even for a result type that
    is not (yet) a registered pytree; the pytree check is separate.
    """
    if x is None or isinstance(x, (str, bytes)):
        return []
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return [v for f in dataclasses.fields(x) for v in raw_leaves(getattr(x, f.name))]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in raw_leaves(item)]
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in raw_leaves(x[k])]
    return [x]


def as_np(x):
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.cpu().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except TypeError:
        return np.asarray(x.tolist() if hasattr(x, "tolist") else x, dtype=np.float64)


def leaves(x):
    return [as_np(v) for v in raw_leaves(x)]


def assert_same(got, want, rtol=1e-12, atol=1e-14):
    g, w = leaves(got), leaves(want)
    assert len(g) == len(w), f"{len(g)} leaves, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        assert a.shape == b.shape, f"leaf {i}: shape {a.shape} != {b.shape}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"leaf {i}")


def tol(backend):
    return (1e-6, 1e-6) if backend == "jax_jit_x32" else (1e-12, 1e-14)


def primary_is_nan(result):
    first = leaves(result)[0]
    return bool(np.isnan(first).any())


def data(entry, seed=0, gen=None):
    return (gen or entry.gen)(np.random.default_rng(seed), N)


def row_args(args, kw):
    """Positions / names of the row-aligned arrays (leading dimension N)."""
    pos = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim and
           a.shape[0] == N]
    names = [k for k, v in kw.items() if isinstance(v, np.ndarray) and v.ndim and
             v.shape[0] == N]
    return pos, names


def take(args, kw, idx):
    pos, names = row_args(args, kw)
    args = [a[idx] if i in pos else a for i, a in enumerate(args)]
    kw = {k: (v[idx] if k in names else v) for k, v in kw.items()}
    return args, kw


# --------------------------------------------------------------------------
# the registry is complete
# --------------------------------------------------------------------------

def test_every_public_callable_is_registered_or_exempt():
    public = public_callables()
    missing = sorted(n for n in public if n not in REGISTRY and n not in EXEMPT
                     and n not in ALIASES)
    assert not missing, f"public callables neither registered nor exempt: {missing}"
    stale = sorted(n for n in list(REGISTRY) + list(EXEMPT) + list(ALIASES) if n not in public)
    assert not stale, f"registry names that are not public: {stale}"
    for alias, target in ALIASES.items():
        assert public[alias] is public[target], f"{alias} is not the same object as {target}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registry_entry_matches_signature(name):
    e = REGISTRY[name]
    fn = e.fn.func if hasattr(e.fn, "func") else e.fn
    has_weights = "sample_weight" in inspect.signature(fn).parameters
    assert has_weights == (e.weights is not None), \
        f"{name}: weights tag {e.weights!r} but sample_weight parameter: {has_weights}"


def test_known_failures_name_real_tests():
    ids = {(p.values[0], f"{p.values[1]}/{p.values[2]}") for p in PARAMS}
    # handed-case keys name a test_Hxx_... function below and one of its variants
    ids |= {(k[0], k[1]) for k in KNOWN_FAILURES if k[1].startswith("handed/") and
            any(name.startswith(f"test_{k[0]}_") for name in globals())}
    assert set(KNOWN_FAILURES) <= ids, sorted(set(KNOWN_FAILURES) - ids)


# --------------------------------------------------------------------------
# the checks
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name, check, backend", PARAMS)
def test_contract(name, check, backend):
    entry = REGISTRY[name]
    with context(backend):
        CHECK_FUNCTIONS[check](entry, backend)


def check_agreement(entry, backend):
    args, kw = data(entry)
    want = entry.fn(*args, **kw, **entry.options)
    got = run(entry, backend, args, kw)
    rtol, atol = tol(backend)
    assert_same(got, want, rtol, atol)


def check_jit(entry, backend):
    args, kw = data(entry)
    # eager JAX with x64, also for the x32 jit (at float32 tolerance): eager ops compiled
    # again in 32 bits would take half this suite's time
    with jax.enable_x64(True):
        eager = entry.fn(*[convert("jax_eager", a) for a in args],
                         **{k: convert("jax_eager", v) for k, v in kw.items()}, **entry.options)
    got = run(entry, backend, args, kw)
    rtol, atol = tol(backend)
    assert_same(got, eager, rtol, atol)
    f = jitted(entry, tuple(sorted(kw)), backend == "jax_jit")
    size = f._cache_size()
    assert size >= 1
    args2, kw2 = data(entry, seed=1)   # same shapes and dtypes, other values
    run(entry, backend, args2, kw2)
    assert f._cache_size() == size, "a second call with the same shapes recompiled"


def check_row_order(entry, backend):
    args, kw = data(entry)
    base = run(entry, backend, args, kw)
    perm = np.random.default_rng(7).permutation(N)
    assert_same(run(entry, backend, *take(args, kw, perm)), base, 1e-12, 1e-14)


def check_tie_order(entry, backend):
    args, kw = data(entry)
    score = np.asarray(args[entry.ties])
    key = score if score.ndim == 1 else score[:, 0]
    rng = np.random.default_rng(3)
    # two orders sorted by score whose tie groups are shuffled differently
    p1 = np.lexsort((rng.permutation(N), key))
    p2 = np.lexsort((rng.permutation(N), key))
    assert np.any(p1 != p2)
    a = run(entry, backend, *take(args, kw, p1))
    b = run(entry, backend, *take(args, kw, p2))
    assert_same(a, b, 1e-12, 1e-14)


def check_weights(entry, backend):
    args, kw = data(entry)
    w = np.random.default_rng(5).integers(1, 4, N)
    conv = [convert(backend, a) for a in args]
    kwc = {k: convert(backend, v) for k, v in kw.items()}
    if entry.weights != "repeat":   # the entry refuses weights: passing them raises
        with pytest.raises((TypeError, ValueError)):
            entry.fn(*conv, **kwc, sample_weight=convert(backend, w), **entry.options)
        return
    weighted = entry.fn(*conv, **kwc, sample_weight=convert(backend, w), **entry.options)
    rargs, rkw = take(args, kw, np.repeat(np.arange(N), w))
    repeated = entry.fn(*[convert(backend, a) for a in rargs],
                        **{k: convert(backend, v) for k, v in rkw.items()}, **entry.options)
    view = entry.weights_view or (lambda r: r)
    assert_same(view(weighted), view(repeated), 1e-12, 1e-14)
    # boolean weights are 0/1 integer weights (scikit-learn reads them so): a mask
    # keeps its rows
    mask = np.ones(N, dtype=bool)
    mask[np.random.default_rng(6).choice(N, 3, replace=False)] = False
    masked = entry.fn(*conv, **kwc, sample_weight=convert(backend, mask), **entry.options)
    kargs, kkw = take(args, kw, np.flatnonzero(mask))
    kept = entry.fn(*[convert(backend, a) for a in kargs],
                    **{k: convert(backend, v) for k, v in kkw.items()}, **entry.options)
    assert_same(view(masked), view(kept), 1e-12, 1e-14)


def check_bad_weights(entry, backend):
    args, kw = data(entry)
    for bad in (-1.0, np.nan, np.inf):
        w = np.ones(N)
        w[N // 2] = bad
        wkw = {**kw, "sample_weight": w}
        if backend.startswith("jax_jit"):
            assert primary_is_nan(run(entry, backend, args, wkw)), f"weight {bad}: not NaN"
        else:
            with pytest.raises(ValueError, match="sample_weight"):
                run(entry, backend, args, wkw)


def check_invalid(entry, backend):
    for gen, argname in entry.invalid:
        args, kw = data(entry, gen=gen)
        if backend.startswith("jax_jit"):
            assert primary_is_nan(run(entry, backend, args, kw)), f"bad {argname}: not NaN"
        else:
            with pytest.raises(ValueError, match=argname):
                run(entry, backend, args, kw)


def check_undefined(entry, backend):
    args, kw = data(entry, gen=entry.undefined)
    if backend.startswith("jax_jit"):
        assert primary_is_nan(run(entry, backend, args, kw))
        return
    args = [convert(backend, a) for a in args]
    kw = {k: convert(backend, v) for k, v in kw.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = entry.fn(*args, **kw, **entry.options)   # the caller's line
    assert primary_is_nan(result), "undefined input did not give NaN"
    ours = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert ours, "no UndefinedMetricWarning"
    assert all(w.filename == __file__ for w in ours), \
        f"warning points at {sorted({w.filename for w in ours})}, not the caller"


def check_mixed_namespaces(entry, backend):
    # a JAX eval step closing over fixed NumPy labels (handed case H19)
    args, kw = data(entry)
    want = entry.fn(*args, **kw, **entry.options)
    i = entry.labels
    labels = args[i]
    other = {j: a for j, a in enumerate(args) if j != i}
    conv = "torch" if backend == "torch" else "jax_eager"

    def call(*others):
        full = list(args)
        for j, a in zip(other, others):
            full[j] = a
        full[i] = labels
        return entry.fn(*full, **kw, **entry.options)

    others = [convert(conv, a) for a in other.values()]
    got = jax.jit(call)(*others) if backend == "jax_jit" else call(*others)
    assert_same(got, want, 1e-12, 1e-14)


def check_pytree(entry, backend):
    # every result type is a JAX pytree (handed case H18)
    args, kw = data(entry)
    result = run(entry, "jax_eager", args, kw)
    bad = [type(x).__name__ for x in jax.tree_util.tree_leaves(result)
           if not isinstance(x, (jax.Array, np.ndarray, np.generic, int, float, bool))]
    assert not bad, f"tree_leaves gives non-array leaves: {bad}"
    if entry.jit is True:
        assert_same(run(entry, "jax_jit", args, kw), result, 1e-12, 1e-14)


def check_float16(entry, backend, half_dtype=np.float16):
    # half-precision inputs, float32-accurate results (handed case H20)
    args, kw = data(entry)
    half = [a.astype(half_dtype) if a.dtype.kind == "f" else a for a in args]
    halfkw = {k: (v.astype(half_dtype) if v.dtype.kind == "f" else v) for k, v in kw.items()}
    want = entry.fn(*[a.astype(np.float64) if a.dtype == half_dtype else a for a in half],
                    **{k: (v.astype(np.float64) if v.dtype == half_dtype else v)
                       for k, v in halfkw.items()}, **entry.options)
    got = run(entry, backend, half, halfkw)
    narrow = [str(x.dtype) for x in raw_leaves(got) if hasattr(x, "dtype") and
              np.dtype(str(x.dtype)).kind == "f" and np.dtype(str(x.dtype)).itemsize < 4]
    assert not narrow, f"results in {narrow}"
    assert_same(got, want, 1e-6, 1e-7)


def check_bfloat16(entry, backend):
    # NumPy bfloat16 (ml_dtypes) used to fail in numpy.isdtype in every metric (handed case H39)
    check_float16(entry, backend, half_dtype=np.dtype(ml_dtypes.bfloat16))


def check_symmetric(entry, backend):
    args, kw = data(entry)
    swapped = [args[1], args[0], *args[2:]]
    assert_same(run(entry, backend, swapped, kw), run(entry, backend, args, kw), 1e-12, 1e-14)


def check_bounds(entry, backend):
    # a perfect ranking's Uno's C was 1 + 2**-52, a reversed one's -4.6e-17 (handed case H35)
    low, high = entry.bounds
    for args, kw in entry.extremes(np.random.default_rng(0), N):
        first = leaves(run(entry, backend, args, kw))[0]
        values = first[~np.isnan(first)]
        assert values.size, "no defined value"
        assert np.all((values >= low) & (values <= high)), \
            f"values {values[(values < low) | (values > high)].tolist()} outside [{low}, {high}]"


def check_none_label(entry, backend):
    args, kw = data(entry)
    args = list(args)
    lab = np.array(args[entry.labels], dtype=object)
    lab[3] = None
    args[entry.labels] = lab
    params = list(inspect.signature(entry.fn).parameters.values())
    param = params[min(entry.labels, len(params) - 1)]
    # *arrays (by_group): the wrapped metric names its own argument
    name = None if param.kind is param.VAR_POSITIONAL else param.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        with pytest.raises(ValueError, match=name):
            entry.fn(*args, **kw, **entry.options)


def check_explicit_mesh(entry, backend):
    """Rows sharded on a mesh with Explicit axes (``jax.make_mesh``'s default) under plain
    ``jit``: the same result as unsharded rows. (JAX refuses a sort or a scatter over an
    explicitly sharded axis; a one-device mesh shows it as well as a pod.)"""
    from jax.sharding import NamedSharding, PartitionSpec

    args, kw = data(entry)
    want = run(entry, backend, args, kw)
    mesh = jax.make_mesh((1,), ("data",))
    rows = NamedSharding(mesh, PartitionSpec("data"))
    pos, names = row_args(args, kw)

    def put(a, is_row):
        return jax.device_put(convert(backend, a), rows) if is_row else a

    args = [put(a, i in pos) for i, a in enumerate(args)]
    kw = {k: put(v, k in names) for k, v in kw.items()}
    names_kw = tuple(sorted(kw))
    got = jitted(entry, names_kw, True)(*[convert(backend, a) for a in args],
                                        *[convert(backend, kw[k]) for k in names_kw])
    assert_same(got, want, *tol(backend))


@contextlib.contextmanager
def _passes(compiled, table_everywhere=False):
    """Run with the compiled passes or without them; ``table_everywhere``: the per-score
    table is tried on inputs of any size."""
    lib, min_n = native.lib, rankstats._TABLE_MIN_N
    native.lib = lib if compiled else None
    rankstats._TABLE_MIN_N = 1 if table_everywhere else min_n
    try:
        yield
    finally:
        native.lib, rankstats._TABLE_MIN_N = lib, min_n


def check_compiled(entry, backend):
    if native.lib is None:
        pytest.skip("calipers._kernels._native is not built")
    args, kw = data(entry)
    with _passes(False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = run(entry, backend, args, kw)
    for table in (False, True):
        with _passes(True, table), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_same(run(entry, backend, args, kw), want, 1e-12, 1e-14)


CHECK_FUNCTIONS = {
    "agreement": check_agreement, "jit": check_jit, "row_order": check_row_order,
    "tie_order": check_tie_order, "weights": check_weights, "bad_weights": check_bad_weights,
    "invalid": check_invalid,
    "undefined": check_undefined, "mixed_namespaces": check_mixed_namespaces,
    "pytree": check_pytree, "float16": check_float16, "bfloat16": check_bfloat16,
    "symmetric": check_symmetric, "bounds": check_bounds, "none_label": check_none_label,
    "explicit_mesh": check_explicit_mesh, "compiled": check_compiled,
}
assert set(CHECK_FUNCTIONS) == set(CHECKS)


# --------------------------------------------------------------------------
# the handed cases behind three of the contracts, with their own numbers
# --------------------------------------------------------------------------

def _handed(case_id, variant):
    key = (case_id, f"handed/{variant}")
    marks = ([pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[key])]
             if key in KNOWN_FAILURES else [])
    return pytest.param(variant, id=variant, marks=marks)


@pytest.mark.parametrize("variant", [_handed("H18", v) for v in ("jax_jit", "jax_jit_x32")])
def test_H18_comparison_results_returned_from_jit(variant):
    case = load_case("H18")
    (auc_in, count_in), (_, conf_kw) = case["inputs"], case["kwargs"]
    (auc_want, conf_want) = case["expected"]
    tol_ = case["tolerance"]
    with context(variant):
        arrays = [convert(variant, np.asarray(auc_in[k])) for k in
                  ("y_true", "y_score_a", "y_score_b")]
        res = jax.jit(calipers.delong_test)(*arrays)
        for field, want in auc_want.items():
            assert abs(float(getattr(res, field)) - want) <= tol_, field
        ci = jax.jit(lambda c, n: calipers.proportion_confint(c, n, **conf_kw))(
            convert(variant, np.asarray(count_in["count"])),
            convert(variant, np.asarray(count_in["nobs"])))
        assert abs(float(ci.low) - conf_want["low"]) <= tol_
        assert abs(float(ci.high) - conf_want["high"]) <= tol_


@pytest.mark.parametrize("variant", [_handed("H19", v) for v in ("jax_eager", "jax_jit")])
def test_H19_numpy_labels_with_jax_scores(variant):
    case = load_case("H19")
    y_np = np.asarray(case["inputs"]["y_true_numpy"])
    s = jnp.asarray(case["inputs"]["y_score_jax"])
    fn = (lambda s: calipers.roc_auc_score(y_np, s))
    got = jax.jit(fn)(s) if variant == "jax_jit" else fn(s)
    assert abs(float(got) - case["expected"]) <= case["tolerance"]


@pytest.mark.parametrize("variant", [_handed("H20", v) for v in ("numpy", "jax_eager")])
def test_H20_float16_scores_give_a_float32_accurate_auc(variant):
    case = load_case("H20")
    rows = np.asarray(case["inputs"]["rle"])
    counts = rows[:, 2].astype(np.int64)
    s = np.repeat(rows[:, 0], counts).astype(case["inputs"]["dtype"])
    y = np.repeat(rows[:, 1], counts).astype(np.int64)
    got = calipers.roc_auc_score(convert(variant, y), convert(variant, s))
    assert np.dtype(str(got.dtype)).itemsize >= 4, got.dtype
    assert abs(float(got) - case["expected"]) <= case["tolerance"]


# --------------------------------------------------------------------------
# eager-JAX compile policy: every entry declares it, and the declaration holds
# --------------------------------------------------------------------------

def test_eager_jax_policy_declared():
    """Each entry's declaration equals the policy its public function carries."""
    from registry import EAGER_JAX

    missing = [e.name for e in ENTRIES if e.name not in EAGER_JAX]
    assert not missing, f"entries without an eager-JAX policy in EAGER_JAX: {missing}"
    for e in ENTRIES:
        declared = EAGER_JAX[e.name]
        actual = getattr(e.fn, "__compile_policy__", None)
        if declared.startswith("none:"):
            assert actual is None and len(declared) > len("none: "), e.name
        else:
            assert declared == actual, (e.name, declared, actual)


_BUCKET_LENGTHS = (130, 150, 200, 250, 300, 400, 500, 700, 900, 1000)


@pytest.mark.parametrize("name", sorted(k for k, v in __import__("registry").EAGER_JAX.items()
                                        if v == "bucketed"))
def test_bucketed_entries_compile_once_per_power_of_two(name):
    """Ten lengths in (128, 1024] make at most three programs (buckets 256, 512, 1024)."""
    from calipers._core import compile as C

    e = next(x for x in ENTRIES if x.name == name)
    C.clear_cache()
    before = C.cache_info()["misses"]
    for n in _BUCKET_LENGTHS:
        args, kwargs = e.gen(np.random.default_rng(n), n)
        args = [jnp.asarray(a) if isinstance(a, np.ndarray) and a.dtype.kind in "biuf" else a
                for a in args]
        kwargs = {k: jnp.asarray(v) if isinstance(v, np.ndarray) and v.dtype.kind in "biuf"
                  else v for k, v in kwargs.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e.fn(*args, **kwargs, **e.options)
    assert C.cache_info()["misses"] - before <= 3, name


# --------------------------------------------------------------------------
# streaming states: any split into batches, merged in any order, equals one shot
# --------------------------------------------------------------------------

from registry import STATE_ENTRIES, STATE_REGISTRY, public_states  # noqa: E402

STATE_BACKENDS = ["numpy", "jax_eager", "jax_jit", "jax_jit_x32"]
STATE_SPLITS = 3        # random splits per (state, backend)


def test_every_public_state_has_a_state_entry():
    public = public_states()
    missing = sorted(set(public) - set(STATE_REGISTRY))
    assert not missing, f"public states without a StateEntry in registry.py: {missing}"
    stale = sorted(set(STATE_REGISTRY) - set(public))
    assert not stale, f"StateEntry names that are not public states: {stale}"


def _state_xp(backend):
    return np if backend == "numpy" else jnp


def _state_batches(entry, cols, rng, width):
    """A random split of the rows into batches, each padded to ``width`` rows with the
    entry's garbage (masked); one batch is empty and one is all padding."""
    n = len(next(iter(cols.values())))
    cuts = np.sort(rng.choice(np.arange(1, n), size=rng.integers(1, 4), replace=False))
    parts = np.split(rng.permutation(n), cuts) + [np.arange(0)]   # an all-padding batch
    out = []
    for idx in parts:
        pad = width - len(idx)
        batch = {}
        for k, v in cols.items():
            fill = np.full((pad,) + v.shape[1:], entry.pad[k], dtype=np.result_type(
                v.dtype, np.asarray(entry.pad[k]).dtype))
            batch[k] = np.concatenate([v[idx].astype(fill.dtype), fill])
        out.append((batch, np.arange(width) < len(idx)))
    return out


def _convert_state_input(backend, a):
    if backend == "numpy":
        return a
    if backend == "jax_jit_x32" and a.dtype.itemsize == 8:
        a = a.astype({"f": np.float32, "i": np.int32}.get(a.dtype.kind, a.dtype))
    return jnp.asarray(a)


def _merge_in_random_order(states, rng):
    states = list(states)
    while len(states) > 1:
        i, j = sorted(rng.choice(len(states), size=2, replace=False))
        a, b = states[i], states[j]
        merged = a.merge(b) if rng.random() < 0.5 else b.merge(a)
        states = [s for t, s in enumerate(states) if t not in (i, j)] + [merged]
    return states[0]


@pytest.mark.parametrize("backend", STATE_BACKENDS)
@pytest.mark.parametrize("name", sorted(STATE_REGISTRY))
def test_state_split_merge_equals_one_shot(name, backend):
    entry = STATE_REGISTRY[name]
    xp = _state_xp(backend)
    with context(backend):
        def step(state, cols, mask):
            return entry.update(state, cols, mask)

        jstep = jax.jit(step) if backend.startswith("jax_jit") else step
        for seed in range(STATE_SPLITS):
            rng = np.random.default_rng(seed)
            cols = entry.gen(rng, N)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UndefinedMetricWarning)
                want = entry.one_shot(cols)
                states = []
                for batch, mask in _state_batches(entry, cols, rng, N):
                    b = {k: _convert_state_input(backend, v) for k, v in batch.items()}
                    m = _convert_state_input(backend, mask)
                    states.append(jstep(entry.init(xp), b, m))
                merged = _merge_in_random_order(states, rng)
                got = entry.values(merged)
            assert len(got) == len(want)
            for i, (g, w) in enumerate(zip(got, want)):
                g, w = as_np(g), as_np(w)
                if i in entry.exact:
                    np.testing.assert_array_equal(g, w, err_msg=f"{name} value {i} (counts)")
                else:
                    rtol = 1e-5 if backend == "jax_jit_x32" else 1e-12
                    np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * 1e-2,
                                               err_msg=f"{name} value {i}")
            if backend.startswith("jax"):
                # the psum of the states' fields is their merge (leafwise sums: integer
                # fields bit for bit, float sums to the rounding of another order)
                summed = jax.tree.map(lambda *xs: sum(xs[1:], xs[0]), *states)
                for f, g in zip(jax.tree.leaves(summed), jax.tree.leaves(merged)):
                    f, g = np.asarray(f), np.asarray(g)
                    if f.dtype.kind in "iub":
                        np.testing.assert_array_equal(f, g)
                    else:
                        np.testing.assert_allclose(f, g, rtol=1e-6 if f.dtype == np.float32
                                                   else 1e-12)


def _empty_batch(entry, cols, width):
    """``width`` rows of the entry's padding garbage, every row masked."""
    batch = {}
    for k, v in cols.items():
        fill = np.full((width,) + v.shape[1:], entry.pad[k], dtype=np.result_type(
            v.dtype, np.asarray(entry.pad[k]).dtype))
        batch[k] = fill
    return batch, np.zeros(width, dtype=bool)


def _assert_empty_values(name, got, want):
    assert len(got) == len(want), f"{name}: {len(got)} values, registry's empty has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_array_equal(as_np(g), as_np(w),
                                      err_msg=f"{name} value {i} of a state with no rows")


@pytest.mark.parametrize("backend", STATE_BACKENDS)
@pytest.mark.parametrize("name", sorted(STATE_REGISTRY))
def test_empty_state_compute_is_nan_with_one_warning(name, backend):
    """A state with no rows (fresh, or fed only padding): the values undefined without rows
    are NaN, eagerly with one UndefinedMetricWarning per state pointing at the caller's
    line; under ``jit`` NaN and no warning. The one-shot functions on no rows refuse the
    input (empty input is invalid) or give the same values."""
    entry = STATE_REGISTRY[name]
    assert entry.empty, f"{name}: the registry entry needs empty= (its values with no rows)"
    xp = _state_xp(backend)
    with context(backend):
        cols = entry.gen(np.random.default_rng(0), N)
        batch, mask = _empty_batch(entry, cols, N)
        b = {k: _convert_state_input(backend, v) for k, v in batch.items()}
        m = _convert_state_input(backend, mask)
        jit = backend.startswith("jax_jit")
        step = jax.jit(entry.update) if jit else entry.update
        padded = step(entry.init(xp), b, m)
        for state in (entry.init(xp), padded):
            with warnings.catch_warnings(record=True) as rec:
                warnings.simplefilter("always")
                if jit:
                    got = jax.jit(entry.values)(state)
                    jax.jit(lambda s: s.compute())(state)
                else:
                    state.compute()
            undefined = [w for w in rec if issubclass(w.category, UndefinedMetricWarning)]
            if jit:
                assert not undefined, [str(w.message) for w in undefined]
            else:
                assert len(undefined) == entry.empty_warnings, \
                    f"{name}.compute() with no rows: {[str(w.message) for w in undefined]}"
                for w in undefined:
                    assert w.filename == __file__, (w.filename, str(w.message))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UndefinedMetricWarning)
                    got = entry.values(state)
            _assert_empty_values(name, got, entry.empty)
    # the one-shot functions on zero rows: invalid input, or the same values
    none = {k: v[:0] for k, v in cols.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            want = entry.one_shot(none)
        except ValueError:
            return
    _assert_empty_values(name, want, entry.empty)
