"""Reading per-example prediction tables (CSV, TSV or Parquet) into NumPy columns.

pyarrow does the parsing; this module only checks what the metrics need and
turns every problem into an :class:`InputError` naming the file, column and
row (data rows counted from 1; for CSV/TSV the line number is given too, the
header being line 1).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ._errors import InputError

_PARQUET = (".parquet", ".pq")
_TRUE, _FALSE = "true", "false"


def delimiter_for(path: Path, sep: str | None) -> str:
    """The field separator: ``sep`` if given (``\\t`` and ``tab`` mean a tab), else by extension."""
    if sep is not None:
        if sep in ("\\t", "tab", "TAB"):
            return "\t"
        if len(sep) != 1:
            raise InputError(f"--sep must be one character (or '\\t' / 'tab'), got {sep!r}")
        return sep
    return "\t" if path.suffix.lower() in (".tsv", ".tab") else ","


def _read_table(path: Path, columns: Sequence[str], sep: str | None = None) -> tuple[Any, str]:
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - cli extra missing
        raise InputError("reading files needs pyarrow: install the cli extra "
                         "(pip install -e '.[cli]' in a checkout)") from exc
    if not path.exists():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    delim = delimiter_for(path, sep)
    what = "Parquet" if suffix in _PARQUET else ("TSV" if delim == "\t" else "CSV")
    try:
        if suffix in _PARQUET:
            table = pq.read_table(path)
            kind = "parquet"
        else:
            parse = pacsv.ParseOptions(delimiter=delim)
            # Read every column as text so that a bad value is reported by row, not
            # swallowed by type inference.
            # the header only: open_csv reads one block, not the whole file
            with pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 16),
                                parse_options=parse) as head:
                names = head.schema.names
            types = {name: pa.string() for name in names}
            table = pacsv.read_csv(path, parse_options=parse, convert_options=pacsv.ConvertOptions(
                column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False))
            kind = "csv"
    except (pa.ArrowInvalid, OSError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise InputError(f"{path}: cannot be read as {what}: {first}") from exc
    seen = set()
    for c in table.column_names:
        if c in seen:
            raise InputError(f"{path}: column name {c!r} appears more than once in the header")
        seen.add(c)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        hint = ("; the header has one column: is the file tab-separated (--sep '\\t')?"
                if len(table.column_names) == 1 and kind == "csv" else "")
        raise InputError(f"{path}: column {missing[0]!r} not found; columns are "
                         f"{', '.join(table.column_names)}{hint}")
    return table, kind


def _where(path, kind, column, i):
    row = i + 1
    line = f" (line {row + 1})" if kind == "csv" else ""
    return f"{path}: column {column!r}, row {row}{line}"


def _to_float(path, kind, column, arr) -> np.ndarray:
    """One column to float64; a non-numeric, missing, NaN or inf value is an error."""
    import pyarrow as pa

    values = arr.to_pylist() if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) \
        else None
    if values is not None:
        out = np.empty(len(values))
        for i, v in enumerate(values):
            try:
                out[i] = float(v)
            except (TypeError, ValueError):
                raise InputError(f"{_where(path, kind, column, i)}: {v!r} is not a number"
                                 if v != "" else
                                 f"{_where(path, kind, column, i)}: empty value") from None
    else:
        if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)
                or pa.types.is_boolean(arr.type)):
            raise InputError(f"{path}: column {column!r} has type {arr.type}, not numeric")
        if arr.null_count:
            i = int(np.flatnonzero(np.asarray(arr.is_null()))[0])
            raise InputError(f"{_where(path, kind, column, i)}: missing value")
        out = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{_where(path, kind, column, i)}: {out[i]} is not a finite number")
    return out


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if np.isfinite(v) else None


def _shown(values, limit=8) -> str:
    vals = sorted(values)
    more = f", ... ({len(vals)} in all)" if len(vals) > limit else ""
    return ", ".join(vals[:limit]) + more


class Table:
    """A prediction file, read once; columns are pulled out and checked by name."""

    def __init__(self, path, columns: Sequence[str] = (), *, sep: str | None = None):
        self.path = Path(path)
        self.table, self.kind = _read_table(self.path, columns, sep)
        if self.table.num_rows == 0:
            raise InputError(f"{self.path}: no data rows")

    @property
    def columns(self) -> list[str]:
        return list(self.table.column_names)

    @property
    def n(self) -> int:
        return int(self.table.num_rows)

    def require(self, columns: Sequence[str]) -> None:
        missing = [c for c in columns if c not in self.table.column_names]
        if missing:
            raise InputError(f"{self.path}: column {missing[0]!r} not found; columns are "
                             f"{', '.join(self.columns)}")

    def where(self, column: str, i: int) -> str:
        return _where(self.path, self.kind, column, i)

    def floats(self, column: str) -> np.ndarray:
        self.require([column])
        return _to_float(self.path, self.kind, column, self.table.column(column).combine_chunks())

    def texts(self, column: str) -> np.ndarray:
        """A column as text (numbers as written; Parquet values through ``str``); none missing."""
        self.require([column])
        arr = self.table.column(column).combine_chunks()
        if arr.null_count:
            i = int(np.flatnonzero(np.asarray(arr.is_null()))[0])
            raise InputError(f"{self.where(column, i)}: missing value")
        vals = np.asarray([str(v) for v in arr.to_pylist()], dtype=object)
        empty = vals == ""
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise InputError(f"{self.where(column, i)}: empty value")
        return vals.astype(str)

    def binary_labels(self, column: str, pos_label: str | None = None) -> np.ndarray:
        """0/1 labels (int64).

        Without ``pos_label`` the values must be 0 or 1 (or true/false, any
        case). With it, a row is positive iff its label equals ``pos_label``
        (the library's ``pos_label`` rule): as text, or as a number when both
        are numbers (``1`` names ``1.0``), or as a boolean (``true`` names
        ``True``). The column must hold at most two distinct labels and
        ``pos_label`` must be one of them.
        """
        text = self.texts(column)
        distinct, codes = np.unique(text, return_inverse=True)
        codes = codes.reshape(-1)
        if pos_label is None:
            value = [_binary_value(lab) for lab in distinct.tolist()]
            bad = [j for j, v in enumerate(value) if v is None]
            if bad:
                i = int(np.flatnonzero(np.isin(codes, bad))[0])  # the first bad row
                lab = str(text[i])
                v = _number(lab)
                shown = f"{v:g}" if v is not None else repr(lab)
                hint = ("" if v is not None else
                        f"; name the positive class with --pos-label (labels: "
                        f"{_shown(distinct.tolist())})")
                raise InputError(f"{self.where(column, i)}: label {shown} is not 0 or 1{hint}")
            return np.asarray(value, dtype=np.int64)[codes]
        if distinct.shape[0] > 2:
            raise InputError(f"{self.path}: column {column!r} has {distinct.shape[0]} distinct "
                             f"labels ({_shown(distinct.tolist())}); a binary report needs two "
                             "(use --multiclass for more)")
        match = [j for j, lab in enumerate(distinct.tolist()) if _same_label(lab, pos_label)]
        if not match:
            raise InputError(f"{self.path}: --pos-label {pos_label!r} is not a label in column "
                             f"{column!r}; its labels are {_shown(distinct.tolist())}")
        return (codes == match[0]).astype(np.int64)

    def class_labels(self, column: str, class_names: Sequence[str]) -> np.ndarray:
        """Multiclass labels as codes 0..K-1: integers in that range, or the class names."""
        text = self.texts(column)
        distinct, codes = np.unique(text, return_inverse=True)
        codes = codes.reshape(-1)
        K = len(class_names)
        names = {c: k for k, c in enumerate(class_names)}
        value = [_class_value(lab, names, K) for lab in distinct.tolist()]
        bad = [j for j, v in enumerate(value) if v is None]
        if bad:
            i = int(np.flatnonzero(np.isin(codes, bad))[0])  # the first bad row
            v = _number(str(text[i]))
            shown = f"{v:g}" if v is not None else repr(str(text[i]))
            raise InputError(f"{self.where(column, i)}: label {shown} is not an integer "
                             f"class in 0..{K - 1} nor a class name "
                             f"({', '.join(class_names)})")
        return np.asarray(value, dtype=np.int64)[codes]


def _binary_value(label: str) -> int | None:
    low = label.strip().lower()
    v = 1.0 if low == _TRUE else 0.0 if low == _FALSE else _number(label)
    return int(v) if v in (0.0, 1.0) else None


def _class_value(label: str, names: dict[str, int], K: int) -> int | None:
    if label in names:
        return names[label]
    v = _number(label)
    return int(v) if v is not None and v == round(v) and 0 <= v <= K - 1 else None


def _same_label(label: str, pos_label: str) -> bool:
    if label == pos_label:
        return True
    a, b = _number(label), _number(pos_label)
    if a is not None and b is not None:
        return a == b
    low = (label.strip().lower(), pos_label.strip().lower())
    return low in ((_TRUE, _TRUE), (_FALSE, _FALSE))


def match_columns(columns: Sequence[str], pattern: str, *,
                  exclude: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """Columns matching a glob pattern (``p_*``) or starting with a prefix (``p_``), in file order.

    Returns the columns and their class names: the column with the pattern's
    literal start and end (or the prefix) taken off.
    """
    glob = any(ch in pattern for ch in "*?[")
    if glob:
        cols = [c for c in columns if c not in exclude and fnmatch.fnmatchcase(c, pattern)]
        cut = min((pattern.find(ch) for ch in "*?[" if ch in pattern))
        ends = [pattern.rfind(ch) for ch in "*?]" if ch in pattern]
        head, tail = pattern[:cut], pattern[max(ends) + 1:]
    else:
        cols = [c for c in columns if c not in exclude and c.startswith(pattern)]
        head, tail = pattern, ""
    names = [c[len(head):len(c) - len(tail)] or c for c in cols]
    return cols, names


def read_predictions(path, label: str, scores: list[str], *, extra: Sequence[str] = (),
                     multiclass: bool = False, pos_label: str | None = None,
                     sep: str | None = None, class_names: Sequence[str] | None = None):
    """Return ``(y, {score_column: scores}, {extra_column: values})``.

    Binary labels: 0 or 1 (or true/false), or any two labels with
    ``pos_label`` naming the positive one. Multiclass (``multiclass``): 0 ..
    K-1 with K = number of score columns, or the class names (default: the
    column names). Scores must be finite numbers. ``extra`` columns (slices,
    groups) are returned as text, a missing value being an error.
    """
    t = path if isinstance(path, Table) else Table(path, [label, *scores, *extra], sep=sep)
    t.require([label, *scores, *extra])
    if multiclass:
        y = t.class_labels(label, list(class_names) if class_names is not None else scores)
    else:
        y = t.binary_labels(label, pos_label)
    cols = {s: t.floats(s) for s in scores}
    if multiclass:  # the library's probability rule, before any metric runs
        check_probability_rows(t.path, np.stack([cols[s] for s in scores], axis=1), scores)
    extras = {c: t.texts(c) for c in extra}
    return y, cols, extras


def check_probability_rows(path, P, columns) -> None:
    """Class-probability columns (n, K): each value in [0, 1] and each row summing to 1.

    The rule and the tolerance are the library's
    (:func:`calipers.probability_sum_tolerance`, ``sqrt(eps)`` of float64),
    so a file the command accepts is one ``log_loss`` accepts.
    Rows are numbered from 1, as data rows in the file.
    """
    import calipers

    P = np.asarray(P, dtype=np.float64)
    bad = ~((P >= 0) & (P <= 1))
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        raise InputError(f"{path}: column {columns[j]!r}, row {i + 1}: {P[i, j]:g} is not a "
                         "probability in [0, 1]")
    tol = calipers.probability_sum_tolerance(P.dtype)
    rowsum = P.sum(axis=1)
    off = np.abs(rowsum - 1) > tol
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise InputError(f"{path}: row {i + 1}: the class probabilities sum to {rowsum[i]:.6g}, "
                         f"not 1 (within {tol:.1e})")
