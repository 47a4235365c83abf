"""trec_eval 9.0.8's measure names and parameters, and ir_measures-style names.

:func:`parse_trec_measures` reads trec_eval ``-m`` specs (``"P.5,10"``,
``"ndcg.1=3,2=9"``, ``"all_trec"``, ``"official"``); :func:`_plan` adds
ir_measures names (``"nDCG@10"``, ``"P(rel=2)@5"``) and gives each measure its
printed name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import re

import numpy as np

__all__ = ["parse_trec_measures"]


TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_POINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)

# trec_eval 9.0.8's measures in its printing order: name -> (kind, default parameters).
# kinds: "meta" (runid, num_q: one summary line), "count" (integers; the summary is the
# sum), "single" (one value per query), "gm" (one value per query, geometric-mean summary,
# no per-query line), "icut" (integer cut-offs), "fcut" (real cut-offs, printed "%.2f"),
# "gains" (optional "level=gain,..." pairs), "floats" (a fixed list of real parameters;
# printed name is "name_<parameters as written>"), "relstring" (per-query string only).
_MEASURES = {
    "runid": ("meta", None), "num_q": ("meta", None),
    "num_ret": ("count", None), "num_rel": ("count", None), "num_rel_ret": ("count", None),
    "map": ("single", None), "gm_map": ("gm", None), "Rprec": ("single", None),
    "bpref": ("single", None), "recip_rank": ("single", None),
    "iprec_at_recall": ("fcut", _RECALL_POINTS), "P": ("icut", TREC_CUTOFFS),
    "relstring": ("relstring", None), "recall": ("icut", TREC_CUTOFFS),
    "infAP": ("single", None), "gm_bpref": ("gm", None),
    "Rprec_mult": ("fcut", _RPREC_MULTS), "utility": ("floats", None),
    "11pt_avg": ("floats", None), "binG": ("single", None), "G": ("gains", None),
    "ndcg": ("gains", None), "ndcg_rel": ("gains", None), "Rndcg": ("gains", None),
    "ndcg_cut": ("icut", TREC_CUTOFFS), "map_cut": ("icut", TREC_CUTOFFS),
    "relative_P": ("icut", TREC_CUTOFFS), "success": ("icut", (1, 5, 10)),
    "set_P": ("single", None), "set_relative_P": ("single", None),
    "set_recall": ("single", None), "set_map": ("single", None), "set_F": ("floats", None),
    "num_nonrel_judged_ret": ("count", None),
}
_ORDER = tuple(_MEASURES)
TREC_MEASURES = _ORDER   # public: every trec_eval measure name calipers computes
# trec_eval's default set (no -m): its "official" measures.
_OFFICIAL = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
             "bpref", "recip_rank", "iprec_at_recall", "P")
COUNT_MEASURES = frozenset(m for m, (kind, _) in _MEASURES.items() if kind == "count")
# Measures defined on trec_eval's ordering only (no expectation over tied scores).
_AVERAGE_TIES = frozenset({"runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map",
                           "Rprec", "recip_rank", "P", "recall", "ndcg", "ndcg_cut"})


def _floats(one, params, what):
    try:
        vals = [float(v) for v in params.split(",")]
    except ValueError:
        raise ValueError(f"{one}: parameters must be {what}") from None
    if not vals or not all(np.isfinite(v) for v in vals):
        raise ValueError(f"{one}: parameters must be {what}")
    return vals


def _check_params(one, name, kind, params):
    """Validate a parameter string; returns the cut-offs for cut kinds, else the string."""
    if kind in ("meta", "count", "single", "gm"):
        raise ValueError(f"{one}: measure {name} takes no parameters")
    if kind == "icut":
        try:
            # trec_eval reads cut-offs as integers: "23.4" is 23.
            ks = {int(float(v)) for v in params.split(",") if v != ""}
        except (ValueError, OverflowError):
            raise ValueError(f"{one}: cut-offs must be positive integers") from None
        if not ks or min(ks) <= 0:
            raise ValueError(f"{one}: cut-offs must be positive integers")
        return ks
    if kind == "fcut":
        vals = _floats(one, params, "non-negative numbers")
        if min(vals) < 0 or (name == "iprec_at_recall" and max(vals) > 1):
            raise ValueError(f"{one}: parameters must be non-negative numbers"
                             + (" at most 1" if name == "iprec_at_recall" else ""))
        return set(vals)
    if kind == "gains":
        for pair in params.split(","):
            lev, eq, g = pair.partition("=")
            try:
                int(lev), float(g)
            except ValueError:
                raise ValueError(f"{one}: parameters must be 'level=gain' pairs, as in "
                                 f"{name}.1=3,2=9") from None
            if not eq:
                raise ValueError(f"{one}: parameters must be 'level=gain' pairs, as in "
                                 f"{name}.1=3,2=9")
        return params
    if name == "utility":
        if len(_floats(one, params, "four numbers")) != 4:
            raise ValueError(f"{one}: parameters must be four numbers (coefficients of "
                             f"relevant retrieved, non-relevant retrieved, relevant missed, "
                             f"non-relevant missed)")
    elif name == "11pt_avg":
        vals = _floats(one, params, "recall levels in [0, 1]")
        if min(vals) < 0 or max(vals) > 1:
            raise ValueError(f"{one}: parameters must be recall levels in [0, 1]")
    elif name == "set_F":
        vals = _floats(one, params, "one positive number (beta)")
        if len(vals) != 1 or vals[0] <= 0:
            raise ValueError(f"{one}: parameters must be one positive number (beta)")
    else:  # relstring
        vals = _floats(one, params, "one non-negative integer (length)")
        if len(vals) != 1 or vals[0] < 0:
            raise ValueError(f"{one}: parameters must be one non-negative integer (length)")
    return params


def parse_trec_measures(specs: str | Sequence[str] | None = None) -> list[tuple[str, Any]]:
    """trec_eval measure specs -> ``[(family, parameter or None), ...]`` in trec_eval's order.

    ``specs``: names as ``trec_eval -m`` takes them: ``"map"``, ``"P.5,10"``,
    ``"ndcg_cut"`` (default cut-offs 5, 10, 15, 20, 30, 100, 200, 500, 1000),
    ``"iprec_at_recall..1,.5"``, ``"ndcg.1=3,2=9"`` (gain per relevance level),
    ``"utility.2,-1,0,0"``, ``"relstring.20"``, ``"all_trec"`` (every measure; also
    the default for ``None``) or ``"official"`` (trec_eval's default set). Cut-off
    families give one pair per cut-off (an ``int``, or a ``float`` for
    ``iprec_at_recall`` and ``Rprec_mult``); other parameterised measures carry
    their parameter string (``None`` for the defaults). Raises ``ValueError``
    naming the spec for an unknown measure, bad parameters, or parameters on a
    measure that takes none.
    """
    if isinstance(specs, str):
        specs = [specs]
    if not specs:
        specs = ["all_trec"]
    want: dict = {}
    for one in specs:
        one = str(one)
        name, _, params = one.partition(".")
        if name in ("all_trec", "official"):
            if params:
                raise ValueError(f"{one}: {name} takes no parameters")
            for fam in (_ORDER if name == "all_trec" else _OFFICIAL):
                kind, default = _MEASURES[fam]
                if kind in ("icut", "fcut"):
                    want.setdefault(fam, set()).update(default)
                else:
                    want.setdefault(fam, None)
            continue
        if name not in _MEASURES:
            raise ValueError(f"{one}: unknown measure {name!r}; supported: "
                             f"{', '.join(_ORDER)}, all_trec, official, and the ir_measures "
                             f"names {', '.join(_IR_NAMES)} (as in nDCG@10, P(rel=2)@5)")
        kind, default = _MEASURES[name]
        if params:
            got = _check_params(one, name, kind, params)
            if kind in ("icut", "fcut"):
                want.setdefault(name, set()).update(got)
            else:
                want[name] = got   # the last parameters given win, as in trec_eval
        elif kind in ("icut", "fcut"):
            want.setdefault(name, set()).update(default)
        else:
            want.setdefault(name, None)
    out: list[tuple[str, Any]] = []
    for fam in _ORDER:
        if fam in want:
            if _MEASURES[fam][0] in ("icut", "fcut"):
                out.extend((fam, k) for k in sorted(want[fam]))
            else:
                out.append((fam, want[fam]))
    return out


def _measure_name(fam, k):
    kind = _MEASURES[fam][0] if fam in _MEASURES else "icut"
    if k is None:
        return fam
    if kind == "fcut":
        return f"{fam}_{k:.2f}"
    return f"{fam}_{k}"

# --------------------------------------------------------------------------
# ir_measures-style names: Measure(rel=r)@cutoff
# --------------------------------------------------------------------------

# ir_measures name -> (trec_eval family without cut-off, with cut-off, takes rel=, cut-off kind)
_IR_NAMES = {
    "AP": ("map", "map_cut", True, "int"),
    "P": (None, "P", True, "int"),
    "R": (None, "recall", True, "int"),
    "RR": ("recip_rank", "_rr_cut", True, "int"),
    "nDCG": ("ndcg", "ndcg_cut", False, "int"),
    "Rprec": ("Rprec", None, True, None),
    "Bpref": ("bpref", None, True, None),
    "infAP": ("infAP", None, True, None),
    "Success": (None, "success", True, "int"),
    "Judged": (None, "_judged", False, "int"),
    "IPrec": (None, "iprec_at_recall", True, "float"),
    "SetP": ("set_P", None, True, None),
    "SetR": ("set_recall", None, True, None),
    "SetF": ("set_F", None, True, None),
    "NumRet": ("num_ret", None, True, None),    # NumRet(rel=r): relevant retrieved
    "NumRel": ("num_rel", None, True, None),
    "NumQ": ("num_q", None, False, None),
}
# calipers-only families behind two ir_measures names (trec_eval has no such measure)
_IR_ONLY = frozenset({"_rr_cut", "_judged"})
_IR_RE = re.compile(r"^([A-Za-z]+)(?:\(([^()]*)\))?(?:@([0-9.]+))?$")


def _parse_ir_measure(spec):
    """``"P(rel=2)@5"`` -> ``(family, cut-off or None, rel or None)``, or None when ``spec``
    is not an ir_measures name (then it is read as a trec_eval name)."""
    text = spec.replace(" ", "")
    m = _IR_RE.match(text)
    if m is None or m.group(1) not in _IR_NAMES:
        return None
    name, args, cut = m.groups()
    if name in ("P", "Rprec", "infAP") and args is None and cut is None:
        return None       # trec_eval's P (all cut-offs), Rprec and infAP: the same measure
    plain, withcut, takes_rel, cut_kind = _IR_NAMES[name]
    rel = None
    for arg in (args.split(",") if args else []):
        key, _, val = arg.partition("=")
        if key != "rel" or not takes_rel:
            raise ValueError(f"{spec}: unsupported parameter {key!r} for {name}"
                             + ("; only rel=" if takes_rel else ""))
        try:
            rel = int(val)
        except ValueError:
            raise ValueError(f"{spec}: rel must be an integer") from None
    if name == "NumRet" and rel is not None:
        return "num_rel_ret", None, rel
    if cut is None:
        if plain is None:
            raise ValueError(f"{spec}: {name} needs a cut-off, as in {name}@10")
        return plain, None, rel
    if withcut is None:
        raise ValueError(f"{spec}: {name} takes no cut-off")
    try:
        k = float(cut) if cut_kind == "float" else int(cut)
    except ValueError:
        raise ValueError(f"{spec}: the cut-off must be "
                         + ("a recall level in [0, 1]" if cut_kind == "float"
                            else "a positive integer")) from None
    if (cut_kind == "int" and k <= 0) or (cut_kind == "float" and not 0 <= k <= 1):
        raise ValueError(f"{spec}: the cut-off must be "
                         + ("a recall level in [0, 1]" if cut_kind == "float"
                            else "a positive integer"))
    return withcut, k, rel


def _plan(measures):
    """Measure specs -> ``[(family, parameter, relevance level or None, printed name)]``.

    trec_eval names first, in trec_eval's order; ir_measures names after them in
    the order given, each printed as written (spaces removed).
    """
    if measures is None:
        measures = ["all_trec"]
    elif isinstance(measures, str):
        measures = [measures]
    measures = list(measures)
    if not measures:
        raise ValueError("measures is empty: name at least one measure (None means all_trec)")
    trec, ir = [], []
    for one in measures:
        got = _parse_ir_measure(str(one))
        if got is None:
            trec.append(str(one))
        else:
            ir.append((got[0], got[1], got[2], str(one).replace(" ", "")))
    plan = [(f, k, None, _measure_name(f, k)) for f, k in parse_trec_measures(trec)] \
        if trec else []
    seen = {p[3] for p in plan}
    for entry in ir:
        if entry[3] not in seen:
            plan.append(entry)
            seen.add(entry[3])
    return plan
