"""Reading per-example prediction tables (CSV or Parquet) into NumPy columns.

pyarrow does the parsing; this module only checks what the metrics need and
turns every problem into an :class:`InputError` naming the file, column and
row (data rows counted from 1; for CSV the line number is given too, the
header being line 1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._errors import InputError


def _read_table(path: Path, columns: list[str]):
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - cli extra missing
        raise InputError("reading files needs pyarrow: pip install 'calipers[cli]'") from exc
    if not path.exists():
        raise InputError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            table = pq.read_table(path)
            kind = "parquet"
        else:
            # Read every column as text so that a bad value is reported by row, not
            # swallowed by type inference.
            head = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 16))
            types = {name: pa.string() for name in head.column_names}
            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(
                column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False))
            kind = "csv"
    except (pa.ArrowInvalid, OSError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise InputError(f"{path}: cannot be read as {'Parquet' if suffix in ('.parquet', '.pq') else 'CSV'}: {first}") from exc
    seen = set()
    for c in table.column_names:
        if c in seen:
            raise InputError(f"{path}: column name {c!r} appears more than once in the header")
        seen.add(c)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise InputError(f"{path}: column {missing[0]!r} not found; columns are "
                         f"{', '.join(table.column_names)}")
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
                shown = v if v != "" else "an empty value"
                raise InputError(f"{_where(path, kind, column, i)}: {shown!r} is not a number"
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


def read_predictions(path, label: str, scores: list[str], *, extra: list[str] = (),
                     multiclass: bool = False):
    """Return ``(y, {score_column: scores}, {extra_column: values})``.

    Labels must be 0 or 1 (binary) or 0 .. K-1 with K = number of score
    columns (``multiclass``); scores must be finite numbers. ``extra`` columns
    (slices, groups) are returned as text, a missing value being an error.
    """
    path = Path(path)
    table, kind = _read_table(path, [label, *scores, *extra])
    if table.num_rows == 0:
        raise InputError(f"{path}: no data rows")
    y = _to_float(path, kind, label, table.column(label).combine_chunks())
    k = len(scores) if multiclass else 2
    bad = (y != np.round(y)) | (y < 0) | (y > k - 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rule = f"an integer class in 0..{k - 1}" if multiclass else "0 or 1"
        raise InputError(f"{_where(path, kind, label, i)}: label {y[i]:g} is not {rule}")
    cols = {s: _to_float(path, kind, s, table.column(s).combine_chunks()) for s in scores}
    if multiclass:  # the library's probability rule, before any metric runs
        check_probability_rows(path, np.stack([cols[s] for s in scores], axis=1), scores)
    extras = {}
    for c in extra:
        arr = table.column(c).combine_chunks()
        if arr.null_count:
            i = int(np.flatnonzero(np.asarray(arr.is_null()))[0])
            raise InputError(f"{_where(path, kind, c, i)}: missing value")
        vals = np.asarray([str(v) for v in arr.to_pylist()])
        empty = vals == ""
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            raise InputError(f"{_where(path, kind, c, i)}: empty value")
        extras[c] = vals
    return y.astype(np.int64), cols, extras


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
