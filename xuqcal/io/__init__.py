"""Building, validating, reading and writing input datasets.

An input dataset is an :class:`xarray.Dataset` over the dimension ``sample`` with the variables
``E`` (prediction error) and ``uE`` (standard uncertainty, ``> 0``), both float64, plus any feature
variables.  The coordinate ``sample`` holds the original 0-based row numbers of the input, so rows
removed by a ``where`` filter keep their numbers and error messages point at the right rows.

All input validation of the library lives here (:func:`validate_dataset`): every constructor and
:func:`open_dataset` call it, and the rest of the package can rely on finite values and positive
uncertainties.

Column specifications (``E``, ``uE``, features, ``where``) are column names or simple expressions
over columns, evaluated by :func:`evaluate_expression`, a small safe evaluator built on :mod:`ast`
(user text is never passed to :func:`eval`).
"""

from __future__ import annotations

import ast
import difflib
import io as io_module
import os
import pathlib
import secrets
import stat
import unicodedata
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import xarray as xr

from xuqcal._version import __version__

__all__ = [
    "SAMPLE_DIM",
    "evaluate_expression",
    "from_arrays",
    "from_dataframe",
    "open_dataset",
    "read_csv",
    "to_netcdf",
    "validate_dataset",
]

SAMPLE_DIM = "sample"
"""Name of the dimension along which the data points of an input dataset lie."""

_LONG_NAMES = {"E": "prediction error", "uE": "prediction uncertainty"}
_MAX_EXAMPLES = 5
_MAX_LISTED_COLUMNS = 40
_MAX_EXPRESSION_LENGTH = 10_000
_WHERE_HINT = (
    "hint: fix the source data, or drop such rows with the where argument, e.g. "
    'where="isfinite(E) & isfinite(uE) & (uE > 0)"'
)

FeatureSpec = str | Sequence[str] | Mapping[str, str] | None
PathLike = str | os.PathLike[str]


# --------------------------------------------------------------------------------------------
# The safe expression evaluator
# --------------------------------------------------------------------------------------------


def _reduce(func: Callable[[np.ndarray], Any], min_size: int = 1) -> Callable[..., Any]:
    """Wrap a reduction so that too-small inputs give NaN instead of a warning or an error."""

    def reduction(x: np.ndarray) -> Any:
        x = np.asarray(x)
        if x.ndim == 0:
            x = x.reshape(1)
        if x.size < min_size:
            return np.float64(np.nan)
        return func(x)

    return reduction


def _min(*args: np.ndarray) -> Any:
    return _reduce(np.min)(args[0]) if len(args) == 1 else np.minimum(args[0], args[1])


def _max(*args: np.ndarray) -> Any:
    return _reduce(np.max)(args[0]) if len(args) == 1 else np.maximum(args[0], args[1])


# name -> (function, allowed numbers of arguments)
_FUNCTIONS: dict[str, tuple[Callable[..., Any], tuple[int, ...]]] = {
    "sqrt": (np.sqrt, (1,)),
    "log": (np.log, (1,)),
    "log10": (np.log10, (1,)),
    "exp": (np.exp, (1,)),
    "abs": (np.abs, (1,)),
    "square": (np.square, (1,)),
    "isfinite": (np.isfinite, (1,)),
    "std": (_reduce(lambda x: np.std(x, ddof=1), min_size=2), (1,)),
    "mean": (_reduce(np.mean), (1,)),
    "median": (_reduce(np.median), (1,)),
    "min": (_min, (1, 2)),
    "max": (_max, (1, 2)),
}

_ARITHMETIC: dict[type[ast.operator], tuple[str, Callable[..., Any]]] = {
    ast.Add: ("+", np.add),
    ast.Sub: ("-", np.subtract),
    ast.Mult: ("*", np.multiply),
    ast.Div: ("/", np.true_divide),
    ast.Pow: ("**", np.power),
    ast.Mod: ("%", np.mod),
}
_LOGICAL: dict[type[ast.AST], tuple[str, Callable[..., Any]]] = {
    ast.BitAnd: ("&", np.logical_and),
    ast.BitOr: ("|", np.logical_or),
    ast.And: ("and", np.logical_and),
    ast.Or: ("or", np.logical_or),
}
_COMPARISONS: dict[type[ast.cmpop], Callable[..., Any]] = {
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
}
_FORBIDDEN_OPERATORS = {
    ast.FloorDiv: "'//'",
    ast.MatMult: "'@'",
    ast.LShift: "'<<'",
    ast.RShift: "'>>'",
    ast.BitXor: "'^' (use ** for powers)",
    ast.Is: "'is'",
    ast.IsNot: "'is not'",
    ast.In: "'in'",
    ast.NotIn: "'not in'",
}
_FORBIDDEN_NODES = {
    ast.Attribute: "attribute access ('.')",
    ast.Subscript: "indexing ('[...]')",
    ast.Lambda: "lambda",
    ast.IfExp: "conditional expression ('if ... else')",
    ast.NamedExpr: "assignment (':=')",
    ast.List: "list",
    ast.Tuple: "tuple",
    ast.Set: "set",
    ast.Dict: "dict",
    ast.ListComp: "comprehension",
    ast.SetComp: "comprehension",
    ast.DictComp: "comprehension",
    ast.GeneratorExp: "generator expression",
    ast.JoinedStr: "f-string",
    ast.Starred: "'*' unpacking",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.Slice: "slice",
}
_ALLOWED_SUMMARY = (
    "allowed are numbers, column names (in `backticks` if not identifiers), "
    "+ - * / ** %, comparisons, & | ~ and or not, parentheses and the functions "
    + ", ".join(sorted(_FUNCTIONS))
)


def _quote_name(name: str) -> str:
    """Write a column name as it must appear in an expression."""
    return name if name.isidentifier() else f"`{name}`"


def _list_names(names: Sequence[str]) -> str:
    shown = [_quote_name(str(n)) for n in names[:_MAX_LISTED_COLUMNS]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", ... ({more} more)" if more > 0 else "")


def _format_rows(rows: Sequence[Any], count: int) -> str:
    text = ", ".join(str(r) for r in rows[:_MAX_EXAMPLES])
    return "rows " + text + (", ..." if count > _MAX_EXAMPLES else "")


class _Expression:
    """A parsed, checked expression (the whitelist is enforced at construction)."""

    def __init__(self, expression: str, variable: str) -> None:
        if not isinstance(expression, str):
            raise TypeError(
                f"{variable}: expected a column name or an expression (str), "
                f"got {type(expression).__name__}"
            )
        self.text = expression
        self.variable = variable
        if not expression.strip():
            raise ValueError(f"{variable}: empty expression")
        if len(expression) > _MAX_EXPRESSION_LENGTH:
            raise ValueError(
                f"{variable}: expression is too long ({len(expression)} characters, "
                f"at most {_MAX_EXPRESSION_LENGTH})"
            )
        source, self.aliases = self._substitute_backticks(expression)
        try:
            self.tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as err:
            raise ValueError(
                f"{variable}: cannot parse expression '{expression}' ({err.msg})"
            ) from None
        except (RecursionError, MemoryError):
            raise ValueError(f"{variable}: expression '{expression}' is too complex") from None
        self.names: list[str] = []  # referenced names (real column names), in order of appearance
        try:
            self._check(self.tree.body)
        except RecursionError:
            raise ValueError(f"{variable}: expression '{expression}' is too complex") from None

    # -- parsing ------------------------------------------------------------------------------

    def _substitute_backticks(self, expression: str) -> tuple[str, dict[str, str]]:
        parts = expression.split("`")
        if len(parts) % 2 == 0:
            raise ValueError(f"{self.variable}: unmatched backtick in expression '{expression}'")
        aliases: dict[str, str] = {}
        by_name: dict[str, str] = {}
        out = []
        for i, part in enumerate(parts):
            if i % 2 == 0:
                out.append(part)
                continue
            if part == "":
                raise ValueError(
                    f"{self.variable}: empty column name `` in expression '{expression}'"
                )
            if part not in by_name:
                alias = f"_xuqcal_column_{len(by_name)}_"
                while alias in expression:
                    alias = "_" + alias
                by_name[part] = alias
                aliases[alias] = part
            out.append(f" {by_name[part]} ")
        return "".join(out), aliases

    def _reject(self, what: str) -> ValueError:
        return ValueError(
            f"{self.variable}: {what} is not allowed in expression '{self.text}'; "
            f"{_ALLOWED_SUMMARY}"
        )

    def _check(self, node: ast.AST) -> None:
        if isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool) or value is None or value is Ellipsis:
                raise self._reject(f"the constant {value!r}")
            if isinstance(value, str | bytes):
                raise self._reject("a string literal")
            if not isinstance(value, int | float):
                raise self._reject(f"the constant {value!r}")
        elif isinstance(node, ast.Name):
            name = self.aliases.get(node.id, node.id)
            if name not in self.names:
                self.names.append(name)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _ARITHMETIC and type(node.op) not in _LOGICAL:
                raise self._reject(
                    "the operator "
                    + _FORBIDDEN_OPERATORS.get(type(node.op), type(node.op).__name__)
                )
            self._check(node.left)
            self._check(node.right)
        elif isinstance(node, ast.UnaryOp):
            self._check(node.operand)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self._check(value)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _COMPARISONS:
                    raise self._reject(
                        "the operator " + _FORBIDDEN_OPERATORS.get(type(op), type(op).__name__)
                    )
            self._check(node.left)
            for comparator in node.comparators:
                self._check(comparator)
        elif isinstance(node, ast.Call):
            self._check_call(node)
        else:
            raise self._reject(_FORBIDDEN_NODES.get(type(node), type(node).__name__))

    def _check_call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Name):
            self._check(node.func)  # attribute access etc. -> a clear rejection
            raise self._reject("calling this kind of object")
        fname = node.func.id
        if fname not in _FUNCTIONS:
            raise ValueError(
                f"{self.variable}: unknown function '{fname}' in expression '{self.text}'; "
                f"allowed functions: {', '.join(sorted(_FUNCTIONS))}"
            )
        if node.keywords:
            raise self._reject("a keyword argument")
        _, n_args = _FUNCTIONS[fname]
        if len(node.args) not in n_args:
            expected = " or ".join(str(n) for n in n_args)
            raise ValueError(
                f"{self.variable}: function '{fname}' takes {expected} argument(s), "
                f"got {len(node.args)} in expression '{self.text}'"
            )
        for arg in node.args:
            self._check(arg)

    # -- name resolution -----------------------------------------------------------------------

    def resolve(self, namespace: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Look up and convert every referenced name; unknown names are an error."""
        env: dict[str, np.ndarray] = {}
        for name in self.names:
            if name in namespace:
                key = name
            else:
                key = self._normalized_match(name, namespace)
                if key is None:
                    raise self._unknown_name(name, namespace)
            env[name] = _numeric_values(namespace[key], f"{self.variable}: column '{key}'")
        return env

    @staticmethod
    def _normalized_match(name: str, namespace: Mapping[str, Any]) -> str | None:
        # Python normalises identifiers to NFKC: accept a column whose NFKC form matches.
        for key in namespace:
            if isinstance(key, str) and unicodedata.normalize("NFKC", key) == name:
                return key
        return None

    def _unknown_name(self, name: str, namespace: Mapping[str, Any]) -> ValueError:
        columns = [str(k) for k in namespace]
        message = (
            f"{self.variable}: unknown name '{name}' in expression '{self.text}'; "
            f"available columns: {_list_names(columns) or '(none)'}"
        )
        close = difflib.get_close_matches(name, columns, n=3)
        if close:
            message += " (did you mean " + " or ".join(f"'{c}'" for c in close) + "?)"
        if name in _FUNCTIONS:
            message += f" ('{name}' is a function: call it, e.g. {name}(x))"
        return ValueError(message)

    # -- evaluation -----------------------------------------------------------------------------

    def evaluate(self, env: Mapping[str, np.ndarray]) -> Any:
        with np.errstate(all="ignore"):
            try:
                return self._eval(self.tree.body, env)
            except (TypeError, ArithmeticError) as err:
                raise ValueError(
                    f"{self.variable}: cannot evaluate expression '{self.text}': {err}"
                ) from None
            except RecursionError:
                raise ValueError(
                    f"{self.variable}: expression '{self.text}' is too complex"
                ) from None

    def _logical_operand(self, value: Any, op: str) -> np.ndarray:
        value = np.asarray(value)
        if value.dtype != np.bool_:
            raise ValueError(
                f"{self.variable}: the operator '{op}' needs true/false operands (comparisons) "
                f"in expression '{self.text}', got numbers; note that & | ~ bind tighter "
                "than comparisons, so write e.g. '(E > 0) & (uE < 1)'"
            )
        return value

    def _eval(self, node: ast.AST, env: Mapping[str, np.ndarray]) -> Any:
        if isinstance(node, ast.Constant):
            try:
                return np.float64(node.value)
            except OverflowError:
                raise ValueError(
                    f"{self.variable}: the number {node.value} is too large in expression "
                    f"'{self.text}'"
                ) from None
        if isinstance(node, ast.Name):
            return env[self.aliases.get(node.id, node.id)]
        if isinstance(node, ast.BinOp):
            left = self._eval(node.left, env)
            right = self._eval(node.right, env)
            if type(node.op) in _LOGICAL:
                symbol, func = _LOGICAL[type(node.op)]
                return func(
                    self._logical_operand(left, symbol), self._logical_operand(right, symbol)
                )
            _, func = _ARITHMETIC[type(node.op)]
            return func(_as_float(left), _as_float(right))
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, env)
            if isinstance(node.op, ast.USub):
                return np.negative(_as_float(operand))
            if isinstance(node.op, ast.UAdd):
                return _as_float(operand)
            symbol = "~" if isinstance(node.op, ast.Invert) else "not"
            return np.logical_not(self._logical_operand(operand, symbol))
        if isinstance(node, ast.BoolOp):
            symbol, func = _LOGICAL[type(node.op)]
            values = [self._logical_operand(self._eval(v, env), symbol) for v in node.values]
            result = values[0]
            for value in values[1:]:
                result = func(result, value)
            return result
        if isinstance(node, ast.Compare):
            result = None
            left = self._eval(node.left, env)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self._eval(comparator, env)
                step = _COMPARISONS[type(op)](left, right)
                result = step if result is None else np.logical_and(result, step)
                left = right
            return result
        if isinstance(node, ast.Call):
            func, _ = _FUNCTIONS[node.func.id]  # type: ignore[union-attr]
            return func(*(_as_float(self._eval(arg, env)) for arg in node.args))
        raise self._reject(type(node).__name__)  # pragma: no cover - excluded by _check


def _as_float(value: Any) -> Any:
    """Booleans take part in arithmetic as 0/1 floats (numpy would treat + as logical or)."""
    array = np.asarray(value)
    return array.astype(np.float64) if array.dtype == np.bool_ else value


def _numeric_values(values: Any, label: str) -> np.ndarray:
    """Convert column values to a float64 (or bool) numpy array, or explain why not."""
    if isinstance(values, xr.DataArray):
        values = values.values
    elif isinstance(values, pd.Series | pd.Index):
        values = _series_to_numpy(pd.Series(values))
    array = np.asarray(values)
    if array.ndim > 1:
        raise ValueError(f"{label} must be 1-D, got shape {array.shape}")
    kind = array.dtype.kind
    if kind == "b":
        return array
    if kind in "iuf":
        return array.astype(np.float64, copy=False)
    if kind in "OUS":
        try:
            return array.astype(np.float64)
        except (TypeError, ValueError):
            pass
        flat = array.reshape(-1)
        bad = []
        for i, value in enumerate(flat):
            try:
                float(value)
            except (TypeError, ValueError):
                bad.append(i)
        if len(bad) == flat.size:
            raise ValueError(
                f"{label} is not numeric: it holds text (dtype {array.dtype}), "
                f"e.g. {_short_repr(flat[0])} in row 0"
            )
        examples = ", ".join(f"{i}: {_short_repr(flat[i])}" for i in bad[:_MAX_EXAMPLES])
        more = ", ..." if len(bad) > _MAX_EXAMPLES else ""
        raise ValueError(
            f"{label} is not numeric: {len(bad)} of {flat.size} values are not numbers "
            f"(rows {examples}{more})"
        )
    raise ValueError(f"{label} is not numeric (dtype {array.dtype})")


def _short_repr(value: Any, width: int = 30) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _series_to_numpy(series: pd.Series) -> np.ndarray:
    """Numpy view of a pandas column: numeric and boolean columns as numbers, others as objects."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype) and not series.hasnans:
        return series.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.to_numpy()


def evaluate_expression(
    expression: str, namespace: Mapping[str, np.ndarray], *, variable: str
) -> np.ndarray:
    """Safely evaluate a column expression such as ``"sqrt(uncertainty_total)"``.

    The expression is parsed with :mod:`ast` and only a whitelist of constructs is evaluated
    (user text is never passed to :func:`eval`): numbers, names, ``+ - * / ** %``, unary ``+ -``,
    comparisons ``< <= > >= == !=`` (also chained, ``0 < x < 1``), the elementwise boolean
    operators ``& | ~`` and ``and or not`` (operands must be true/false values, e.g.
    comparisons), parentheses and the functions ``sqrt, log, log10, exp, abs, square, isfinite``
    (elementwise), ``std`` (ddof=1), ``mean, median`` (reductions over all rows) and ``min, max``
    (one argument: reduction; two arguments: elementwise). Names that are not Python
    identifiers are written in backticks: ```col name` * 2``. Invalid operations such as
    ``log(-1)`` or ``1/0`` give NaN or inf silently; the dataset validation reports them.

    Parameters
    ----------
    expression : str
        The expression.
    namespace : Mapping of str to array_like
        The columns, each 1-D of the same length (0-d values act as constants). Integer columns
        are converted to float64; boolean columns stay boolean (they count as 0/1 in arithmetic).
        Only the referenced columns are looked up, so a lazy mapping is fine.
    variable : str
        The name of the variable being computed, used to prefix error messages.

    Returns
    -------
    numpy.ndarray
        A float64 (or, for a comparison or boolean expression, bool) array with one value per
        row. Scalar results such as ``mean(E)`` are broadcast to the row count.

    Raises
    ------
    ValueError
        If the expression cannot be parsed, uses a construct outside the whitelist (the message
        quotes the expression), references an unknown name (the message names ``variable``, the
        unknown name and lists the available columns), uses a non-numeric column, or does not
        depend on any column (e.g. ``"3"``).

    Examples
    --------
    >>> import numpy as np
    >>> ns = {"y": np.array([1.0, 2.0]), "y pred": np.array([0.5, 2.5])}
    >>> evaluate_expression("y - `y pred`", ns, variable="E")
    array([ 0.5, -0.5])
    >>> evaluate_expression("abs(y - `y pred`) < 1", ns, variable="where")
    array([ True,  True])
    """
    compiled = _Expression(expression, variable)
    env = compiled.resolve(namespace)
    lengths = {name: values.shape[0] for name, values in env.items() if values.ndim == 1}
    if not lengths:
        raise ValueError(f"{variable}: expression '{expression}' does not depend on any column")
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name}: {n}" for name, n in lengths.items())
        raise ValueError(
            f"{variable}: the columns in expression '{expression}' have different lengths "
            f"({detail})"
        )
    n_rows = next(iter(lengths.values()))
    result = np.asarray(compiled.evaluate(env))
    if result.dtype != np.bool_:
        result = result.astype(np.float64, copy=False)
    if result.ndim == 0:
        result = np.full(n_rows, result[()], dtype=result.dtype)
    return result


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _is_dask(data: Any) -> bool:
    return type(data).__module__.startswith("dask")


def _compute(*values: Any) -> tuple[Any, ...]:
    if any(_is_dask(v) for v in values):
        import dask

        return tuple(dask.compute(*values))
    return values


def _row_labels(ds: xr.Dataset) -> np.ndarray | None:
    if SAMPLE_DIM in ds.coords:
        return np.asarray(ds[SAMPLE_DIM].values)
    return None


def _value_problems(ds: xr.Dataset, names: Sequence[str], uE: str) -> list[str]:
    """Count NaN, +inf, -inf (and, for ``uE``, non-positive values) in 1-D variables.

    For dask-backed data all counts are computed in one pass; the masks are computed again only
    for the checks that fail, to find the example rows.
    """
    checks: list[tuple[str, str, Any]] = []
    for name in names:
        data = ds[name].data
        if data.dtype == np.bool_:
            continue
        checks += [
            (name, "NaN", np.isnan(data)),
            (name, "+inf", np.isinf(data) & (data > 0)),
            (name, "-inf", np.isinf(data) & (data < 0)),
        ]
        if name == uE:
            checks.append((name, "not positive", np.isfinite(data) & (data <= 0)))
    counts = _compute(*(mask.sum() for _, _, mask in checks))
    n = ds.sizes[SAMPLE_DIM]
    labels = _row_labels(ds)
    problems = []
    for (name, label, mask), count in zip(checks, counts, strict=True):
        count = int(count)
        if count == 0:
            continue
        (mask,) = _compute(mask)
        positions = np.flatnonzero(np.asarray(mask))[:_MAX_EXAMPLES]
        rows = [labels[p].item() if labels is not None else int(p) for p in positions]
        expression = ds[name].attrs.get("expression")
        note = f"; computed as '{expression}'" if expression and expression != name else ""
        problems.append(
            f"{name}: {count} of {n} values are {label} ({_format_rows(rows, count)}){note}"
        )
    return problems


def _ratio_problems(ds: xr.Dataset, E: str, uE: str) -> list[str]:
    """Overflows of the z-scores and of the squares: rows whose ``z = E / uE`` has a square
    beyond float64 (``|z| > ~1.3e154``, e.g. one uE = 1e-300 with E ~ 1), and data whose span
    ``max(|E|, uE) / min(uE)`` exceeds ``2^960`` (their squares cannot be held at one scale;
    see :meth:`xuqcal.core.statistics.PreparedData.from_arrays`). Only points with finite values
    and ``uE > 0`` are looked at (the others are reported by :func:`_value_problems`)."""
    from xuqcal.core.statistics import MAX_SPAN_EXPONENT

    e, u = ds[E].data, ds[uE].data
    if e.dtype == np.bool_ or u.dtype == np.bool_:
        return []
    with np.errstate(all="ignore"):
        valid = np.isfinite(e) & np.isfinite(u) & (u > 0)
        z = e / np.where(valid, u, 1.0)
        overflow = valid & ~np.isfinite(z * z)
        abs_e = np.where(valid, np.abs(e), 0.0)
        u_valid = np.where(valid, u, np.inf)
        count, n_valid, e_max, u_max, u_min = _compute(
            overflow.sum(), valid.sum(), abs_e.max(), np.where(valid, u, 0.0).max(),
            u_valid.min())
    problems = []
    n = ds.sizes[SAMPLE_DIM]
    if int(count):
        with np.errstate(all="ignore"):  # a Dask graph divides again when computed
            (mask,) = _compute(overflow)
        positions = np.flatnonzero(np.asarray(mask))[:_MAX_EXAMPLES]
        labels = _row_labels(ds)
        rows = [labels[p].item() if labels is not None else int(p) for p in positions]
        problems.append(
            f"{E}, {uE}: {int(count)} of {n} z-scores {E}/{uE} overflow (|z| > 1e154: z² is "
            f"beyond the float64 range) ({_format_rows(rows, int(count))})"
        )
    if int(n_valid):
        hi, lo = max(float(e_max), float(u_max)), float(u_min)
        if np.frexp(hi)[1] - np.frexp(lo)[1] > MAX_SPAN_EXPONENT:
            problems.append(
                f"{uE}: the values span too many orders of magnitude (max(|{E}|, {uE}) = "
                f"{hi:.3g}, min({uE}) = {lo:.3g}, a ratio above 2^{MAX_SPAN_EXPONENT}): their "
                "squares cannot be represented in float64 at a common scale"
            )
    return problems


def _raise_problems(problems: list[str], *, prefix: str = "", hint: str = "") -> None:
    if not problems:
        return
    if len(problems) == 1:
        message = problems[0]
    else:
        message = f"invalid input data ({len(problems)} problems):\n  " + "\n  ".join(problems)
    if hint:
        message += "\n" + hint
    raise ValueError(prefix + message)


def _names_list(features: object) -> list:
    """``features`` given as a sequence of names, as a list; a ValueError naming ``features``
    for anything else (a number, ...)."""
    if isinstance(features, bytes) or not isinstance(features, Iterable):
        raise ValueError(f"features: expected a variable name or a list of names, got "
                         f"{features!r}")
    return list(features)


def _check_dataset(ds: xr.Dataset, E: str, uE: str, features: FeatureSpec) -> list[str]:
    """Structural checks raise at once; value problems are collected and returned."""
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"ds: expected an xarray.Dataset, got {type(ds).__name__}")
    variables = [str(v) for v in ds.data_vars]
    for role, var in (("E", E), ("uE", uE)):
        if not isinstance(var, str):
            raise ValueError(f"{role}: expected the name of a variable (a string), got {var!r}")
        if var not in ds.data_vars:
            raise ValueError(
                f"{role}: the dataset has no variable '{var}' "
                f"(data variables: {_list_names(variables) or 'none'}); "
                f"pass {role}='name' to use another variable (or, where a function has no "
                f"{role} parameter, rename it: ds.rename({{'name': '{role}'}}))"
            )
    if features is None:
        feature_names = [v for v in variables if v not in (E, uE)]
    else:
        feature_names = [features] if isinstance(features, str) else _names_list(features)
        for feature in feature_names:
            if feature not in ds.data_vars:
                raise ValueError(
                    f"{feature}: unknown feature variable '{feature}' "
                    f"(data variables: {_list_names(variables)})"
                )
    names = [E, uE, *feature_names]
    for var in names:
        dims = ds[var].dims
        if dims != (SAMPLE_DIM,):
            hint = ""
            if len(dims) == 1:
                hint = f"; rename it with ds.rename({{'{dims[0]}': '{SAMPLE_DIM}'}})"
            elif len(dims) > 1 and var in (E, uE):
                other = [d for d in dims if d != SAMPLE_DIM] or list(dims)
                hint = ("; multi-dimensional data are not supported yet: select one slice, "
                        f"e.g. ds.isel({other[0]}=0)")
            elif len(dims) > 1:
                hint = "; pass features=[...] to validate only the 1-D feature variables"
            raise ValueError(
                f"{var}: expected a 1-D variable over the dimension '{SAMPLE_DIM}', "
                f"got dimensions {dims}{hint}"
            )
        kind = ds[var].dtype.kind
        allowed = "iuf" if var in (E, uE) else "biuf"
        if kind not in allowed:
            raise ValueError(
                f"{var}: values are not numeric (dtype {ds[var].dtype}); "
                f"{'E and uE' if var in (E, uE) else 'features'} must hold numbers"
            )
    if ds.sizes[SAMPLE_DIM] == 0:
        raise ValueError(f"ds: empty data: the dataset has 0 rows along '{SAMPLE_DIM}'")
    return _value_problems(ds, names, uE) + _ratio_problems(ds, E, uE)


def validate_dataset(
    ds: xr.Dataset, *, E: str = "E", uE: str = "uE", features: FeatureSpec = None
) -> xr.Dataset:
    """Check that a dataset is a valid xuqcal input, and return it unchanged.

    A valid input has variables ``E`` and ``uE`` and the feature variables, each 1-D over the
    dimension ``sample`` with at least one row; ``E``, ``uE`` and the features are numeric (the
    features may also be boolean) and finite, and ``uE > 0``; the z-scores ``E / uE`` must have
    a finite square (an overflow is an error naming the rows, never a verdict) and the data a
    span ``max(|E|, uE) / min(uE)`` of at most ``2^960``. For dask-backed variables the data
    stay lazy but the checks are computed (counts first, then the offending rows only when a
    problem is found).

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset.
    E, uE : str, optional
        Names of the error and uncertainty variables.
    features : str or sequence of str, optional
        The feature variables to check. By default every other data variable is a feature.

    Returns
    -------
    xarray.Dataset
        ``ds`` itself.

    Raises
    ------
    ValueError
        For a missing variable, a variable that is not 1-D over ``sample``, non-numeric values,
        zero rows, or NaN, +inf, -inf and (for ``uE``) non-positive values. Value problems of all
        variables are reported together, one per line, each naming the variable, the problem,
        the count and up to five row numbers (the ``sample`` coordinate), e.g.
        ``"uE: 3 of 2040 values are not positive (rows 5, 17, 230)"``.

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2])
    >>> validate_dataset(ds.assign(uE=ds.uE - 0.25))
    Traceback (most recent call last):
    ...
    ValueError: uE: 1 of 2 values are not positive (rows 1)
    """
    _raise_problems(_check_dataset(ds, E, uE, features))
    return ds


# --------------------------------------------------------------------------------------------
# Constructors
# --------------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _variable_attrs(var: str, expression: str, units: str | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if var in _LONG_NAMES:
        attrs["long_name"] = _LONG_NAMES[var]
        if units is not None:
            attrs["units"] = str(units)
    attrs["expression"] = expression
    return attrs


def _dataset_attrs(
    *,
    source: str,
    E: str,
    uE: str,
    where: str,
    n_rows_read: int,
    n_rows_dropped: int,
    name: str | None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "xuqcal_version": str(__version__),
        "created": _now(),
        "source": source,
        "E_expression": E,
        "uE_expression": uE,
        "where": where,
        "n_rows_read": int(n_rows_read),
        "n_rows_dropped": int(n_rows_dropped),
    }
    if name is not None:
        attrs["name"] = str(name)
    return attrs


def _check_feature_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"features: a feature name must be a non-empty string, got {name!r}")
    if name in ("E", "uE", SAMPLE_DIM):
        raise ValueError(
            f"features: a feature cannot be named '{name}' (reserved for "
            f"{'the sample coordinate' if name == SAMPLE_DIM else 'the ' + _LONG_NAMES[name]}); "
            f"choose another name with the mapping form, e.g. features={{'{name}_': '...'}}"
        )
    if "/" in name:
        raise ValueError(f"features: a feature name cannot contain '/' (got '{name}')")
    return name


def _sample_coord(rows: np.ndarray) -> xr.Variable:
    return xr.Variable(
        SAMPLE_DIM, np.asarray(rows, dtype=np.int64), {"long_name": "row number in the input"}
    )


def _to_1d(values: Any, var: str) -> Any:
    """Numpy or dask 1-D data from an array, list, Series or DataArray."""
    if isinstance(values, xr.DataArray):
        data = values.data
    elif _is_dask(values):
        data = values
    else:
        data = _series_to_numpy(values) if isinstance(values, pd.Series) else np.asarray(values)
    if data.ndim != 1:
        raise ValueError(f"{var}: expected 1-D values, got an array of shape {data.shape}")
    kind = data.dtype.kind
    allowed = "iuf" if var in ("E", "uE") else "biuf"
    if kind in allowed:
        return data if kind == "b" else data.astype(np.float64)
    if kind in "OUS" and not _is_dask(data):
        converted = _numeric_values(data, f"{var}: the input")
        if converted.dtype.kind in allowed:
            return converted
    raise ValueError(
        f"{var}: values are not numeric (dtype {data.dtype}); "
        f"{'E and uE' if var in ('E', 'uE') else 'features'} must hold numbers"
    )


def from_arrays(
    E: npt.ArrayLike | xr.DataArray,
    uE: npt.ArrayLike | xr.DataArray,
    *,
    name: str | None = None,
    units: str | None = None,
    **features: npt.ArrayLike | xr.DataArray,
) -> xr.Dataset:
    """Build a validated input dataset from arrays of errors, uncertainties and features.

    Parameters
    ----------
    E, uE : array_like or xarray.DataArray
        Prediction errors and standard uncertainties (``uE > 0``), 1-D, one value per data point.
        A DataArray may use any dimension name (it becomes ``sample``); its coordinates are
        dropped, the values are taken in order. Dask-backed DataArrays stay lazy; only the
        validation checks are computed.
    name : str, optional
        A name for the dataset (attribute ``name``).
    units : str, optional
        Units of ``E`` and ``uE`` (attribute ``units`` of both variables).
    **features : array_like or xarray.DataArray
        Feature variables (numeric or boolean), one value per data point. A feature cannot be
        named ``name``, ``units``, ``E``, ``uE`` or ``sample``.

    Returns
    -------
    xarray.Dataset
        Variables ``E``, ``uE`` (float64) and the features over ``sample`` = 0, 1, ..., M-1.

    Raises
    ------
    ValueError
        For inputs of different lengths, non-numeric values, zero rows, NaN or infinite values,
        or ``uE <= 0`` (see :func:`validate_dataset`).

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.3, 0.2], [0.2, 0.25, 0.1], units="eV", X=[1.0, 2.0, 3.0])
    >>> ds.sizes["sample"], list(ds.data_vars)
    (3, ['E', 'uE', 'X'])
    """
    inputs = {"E": E, "uE": uE}
    for feature in features:
        inputs[_check_feature_name(feature)] = features[feature]
    data = {var: _to_1d(values, var) for var, values in inputs.items()}
    lengths = {var: d.shape[0] for var, d in data.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{var} has {n}" for var, n in lengths.items())
        raise ValueError(
            f"length mismatch: {detail} values; E, uE and every feature need exactly one value "
            "per data point"
        )
    n = lengths["E"]
    ds = xr.Dataset(
        {
            var: xr.Variable(SAMPLE_DIM, d, _variable_attrs(var, var, units))
            for var, d in data.items()
        },
        coords={SAMPLE_DIM: _sample_coord(np.arange(n))},
        attrs=_dataset_attrs(
            source="arrays", E="E", uE="uE", where="", n_rows_read=n, n_rows_dropped=0, name=name
        ),
    )
    return validate_dataset(ds)


class _Columns(Mapping[str, np.ndarray]):
    """Lazy mapping from column name to a numpy array (converted on first access)."""

    def __init__(self, df: pd.DataFrame) -> None:
        self._df = df
        self._positions = {str(c): i for i, c in enumerate(df.columns)}
        self._cache: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self._cache:
            self._cache[key] = _series_to_numpy(self._df.iloc[:, self._positions[key]])
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._positions)

    def __len__(self) -> int:
        return len(self._positions)

    def __contains__(self, key: object) -> bool:
        return key in self._positions


def _column_expression(spec: Any, columns: Mapping[str, Any]) -> Any:
    """A spec that is exactly a column name is that column, even if it is not an identifier."""
    if isinstance(spec, str) and spec in columns and "`" not in spec:
        return f"`{spec}`"
    return spec


def _feature_specs(features: FeatureSpec, columns: Mapping[str, Any]) -> dict[str, str]:
    if features is None:
        return {}
    if isinstance(features, Mapping):
        specs = {}
        for key, expression in features.items():
            specs[_check_feature_name(key)] = expression
        return specs
    items = [features] if isinstance(features, str) else _names_list(features)
    specs = {}
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"features: expected column names (str), got {item!r}")
        if item in columns:
            feature = item
        else:
            compiled = _Expression(item, "features")
            if not isinstance(compiled.tree.body, ast.Name):
                raise ValueError(
                    f"features: '{item}' is an expression, not a column name; name the result "
                    f"with the mapping form, e.g. features={{'X1': '{item}'}}"
                )
            feature = compiled.names[0]
        if _check_feature_name(feature) in specs:
            raise ValueError(f"features: '{feature}' is given twice")
        specs[feature] = item
    return specs


def from_dataframe(
    df: pd.DataFrame,
    *,
    E: str,
    uE: str,
    features: FeatureSpec = None,
    where: str | None = None,
    name: str | None = None,
    units: str | None = None,
    source: str | None = None,
) -> xr.Dataset:
    """Build a validated input dataset from the columns of a DataFrame.

    Parameters
    ----------
    df : pandas.DataFrame
        The data, one row per data point.
    E, uE : str
        Column names or expressions over columns (see :func:`evaluate_expression`), e.g.
        ``E="logP - y_pred"``, ``uE="sqrt(uncertainty_total)"``. A string that is exactly a
        column name is that column, even if it is not a Python identifier; otherwise column names
        that are not identifiers are written in backticks (```E (eV)` - pred``).
    features : str, sequence of str or mapping of str to str, optional
        Feature variables: column names (the variable is named after the column) or a mapping
        ``{name: expression}``; an expression that is not a bare column name needs the mapping
        form. Features cannot be named ``E``, ``uE`` or ``sample``.
    where : str, optional
        A row filter, evaluated after ``E``, ``uE`` and the features; its namespace holds the
        columns plus ``E``, ``uE`` and the feature names (which take precedence over columns of
        the same name), e.g. ``"uE > 1e-6 * std(E)"``. Reductions (``std``, ``mean``, ...) see
        all rows. It must give one true/false value per row.
    name : str, optional
        A name for the dataset (attribute ``name``).
    units : str, optional
        Units of ``E`` and ``uE``.
    source : str, optional
        Provenance recorded in the attribute ``source`` (default ``"dataframe"``).

    Returns
    -------
    xarray.Dataset
        Variables ``E``, ``uE`` (float64) and the features over ``sample``, whose coordinate is
        the 0-based position of each kept row in ``df`` (not ``df.index``). The attributes record
        the expressions, the filter, the numbers of rows read and dropped, the version and time.

    Raises
    ------
    ValueError
        For duplicated column names, unknown columns, non-numeric columns, invalid
        expressions, a filter that is not boolean or keeps no row, zero rows, and NaN,
        infinite or non-positive values (see :func:`validate_dataset`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"logP": [1.0, 2.0, 3.0], "y_pred": [1.1, 1.8, 3.3],
    ...                    "uq": [0.2, 0.3, 0.0]})
    >>> ds = from_dataframe(df, E="logP - y_pred", uE="uq", where="uE > 0")
    >>> ds["sample"].values.tolist(), ds.attrs["n_rows_dropped"]
    ([0, 1], 1)
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas.DataFrame, got {type(df).__name__}")
    if df.columns.duplicated().any():
        dup = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
        raise ValueError(f"duplicated column names: {', '.join(dup)}; give each column a name")
    n_rows = len(df)
    where = where or ""
    source = "dataframe" if source is None else str(source)
    if n_rows == 0:
        raise ValueError(f"empty data: {source} has 0 rows")
    columns = _Columns(df)
    feature_specs = _feature_specs(features, columns)
    specs = {"E": E, "uE": uE, **feature_specs}
    values = {
        var: evaluate_expression(_column_expression(spec, columns), columns, variable=var)
        for var, spec in specs.items()
    }
    for var in ("E", "uE"):
        if values[var].dtype == np.bool_:
            raise ValueError(
                f"{var}: expression '{specs[var]}' gives true/false values, not numbers"
            )
    keep = np.ones(n_rows, dtype=bool)
    if where:
        keep = evaluate_expression(where, ChainMap(values, columns), variable="where")
        if keep.dtype != np.bool_:
            raise ValueError(
                f"where: expression '{where}' must give true/false for each row, got numbers "
                f"(dtype {keep.dtype}); use a comparison, e.g. 'uE > 0'"
            )
        if not keep.any():
            message = f"where: expression '{where}' keeps none of the {n_rows} rows (empty data)"
            bad = [
                var for var, v in values.items() if v.dtype != np.bool_ and not np.isfinite(v).all()
            ]
            if bad:
                message += (
                    f"; note that {', '.join(bad)} contain non-finite values, which make "
                    "reductions such as std() NaN"
                )
            raise ValueError(message)
    rows = np.flatnonzero(keep)
    ds = xr.Dataset(
        {
            var: xr.Variable(SAMPLE_DIM, v[keep], _variable_attrs(var, specs[var], units))
            for var, v in values.items()
        },
        coords={SAMPLE_DIM: _sample_coord(rows)},
        attrs=_dataset_attrs(
            source=source,
            E=E,
            uE=uE,
            where=where,
            n_rows_read=n_rows,
            n_rows_dropped=n_rows - rows.size,
            name=name,
        ),
    )
    _raise_problems(_check_dataset(ds, "E", "uE", None), hint=_WHERE_HINT)
    return ds


def read_csv(
    path: PathLike,
    *,
    E: str,
    uE: str,
    features: FeatureSpec = None,
    where: str | None = None,
    name: str | None = None,
    units: str | None = None,
    **read_csv_kwargs: Any,
) -> xr.Dataset:
    """Read a CSV file into a validated input dataset.

    The file is read with :func:`pandas.read_csv` and passed to :func:`from_dataframe`; the
    attribute ``source`` records ``path`` as given. The coordinate ``sample`` is the 0-based
    number of each data row in the file (the header is not counted).

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    E, uE, features, where, name, units
        As in :func:`from_dataframe`.
    **read_csv_kwargs
        Passed to :func:`pandas.read_csv` (e.g. ``sep=";"``).

    Returns
    -------
    xarray.Dataset
        The validated dataset.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        If ``path`` does not exist or is a folder.
    ValueError
        If the file is empty, binary or NetCDF, is not valid CSV, has duplicated column names
        (which pandas would silently rename ``E``, ``E.1``), or its content is not a valid
        input (see :func:`from_dataframe`); the message names the file.

    Examples
    --------
    >>> ds = read_csv("qm9_qm9_E_calibrated_isotonic_test.csv",  # doctest: +SKIP
    ...               E="E_ - prediction", uE="sqrt(uncertainty_total)", units="eV")
    >>> ds = read_csv("Perovskite_RF_Test_cal.csv", E="E", uE="uE",  # doctest: +SKIP
    ...               where="uE > 1e-6 * std(E)")
    """
    source = os.fspath(path) if isinstance(path, str | os.PathLike) else "<stream>"
    if isinstance(path, str | os.PathLike) and "://" not in os.fspath(path):
        _check_input_file(path, "a CSV file", pipe=True)
        if stat.S_ISFIFO(os.stat(path).st_mode):  # read once; checked and parsed from memory
            path = _read_pipe(path)
    if _local_plain_file(path, read_csv_kwargs) or isinstance(path, io_module.BytesIO):
        if _netcdf_signature(path):
            raise ValueError(f"{source} is a NetCDF file, not a CSV file; read it with "
                             "xuqcal.open_dataset")
        if "encoding" not in read_csv_kwargs and _binary(path):
            raise ValueError(f"{source} is a binary file, not a text CSV file (it contains NUL "
                             "bytes); give a CSV file, or its encoding with encoding=...")
    try:
        df = pd.read_csv(path, **read_csv_kwargs)
        _check_header(path, df, read_csv_kwargs, source)
    except PermissionError:
        raise PermissionError(f"{source}: permission denied (the file cannot be read)") from None
    except UnicodeDecodeError as err:
        raise ValueError(
            f"{source} is not a text CSV file in the {err.encoding} encoding (byte "
            f"0x{err.object[err.start]:02x} at position {err.start}); give a CSV file, or its "
            "encoding with encoding=..."
        ) from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{source} is empty: no header row and no data") from None
    except pd.errors.ParserError as err:
        raise ValueError(f"{source} cannot be read as CSV: {str(err).strip()}") from None
    return from_dataframe(
        df,
        E=E,
        uE=uE,
        features=features,
        where=where,
        name=name,
        units=units,
        source=source,
    )


_HEADER_ONLY_KWARGS = ("sep", "delimiter", "encoding", "encoding_errors", "skiprows", "comment",
                       "quotechar", "quoting", "doublequote", "escapechar", "skipinitialspace",
                       "lineterminator", "dialect", "engine", "compression", "storage_options",
                       "skip_blank_lines", "delim_whitespace")


_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar", ".tgz", ".tbz2")


def _local_plain_file(path: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether ``path`` names a local, uncompressed file (whose bytes can be checked before
    pandas reads it); URLs, streams and compressed files are left to pandas."""
    if not isinstance(path, str | os.PathLike):
        return False
    text = os.fspath(path)
    if "://" in text:
        return False
    if kwargs.get("compression", "infer") not in ("infer", None):
        return False
    return not text.lower().endswith(_COMPRESSED_SUFFIXES)


def _check_input_file(path: PathLike, what: str, *, pipe: bool = False) -> None:
    """Refuse a missing path, a folder, or a file that is not a regular file (a device, a
    socket; a named pipe unless ``pipe``) given as an input file, and one that cannot be read.
    """
    shown = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{shown}: no such file (expected {what})")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{shown} is a folder, not {what}")
    mode = os.stat(path).st_mode
    kinds = {stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
             stat.S_ISSOCK: "a socket", stat.S_ISFIFO: "a named pipe"}
    for test, kind in kinds.items():
        if test(mode) and not (pipe and test is stat.S_ISFIFO):
            raise ValueError(f"{shown} is {kind}, not a regular file; expected {what}")
    if not os.access(path, os.R_OK):
        raise PermissionError(f"{shown}: permission denied (the file cannot be read); expected "
                              f"{what}")


def _read_pipe(path: PathLike) -> io_module.BytesIO:
    """The whole content of a pipe (``<(command)``, ``/dev/stdin``, a named pipe), read once:
    its bytes can be checked and parsed only once. A named pipe that no program writes to is
    refused at once instead of waiting forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read()
    finally:
        os.close(fd)
    if not data:
        raise ValueError(f"{os.fspath(path)} is a pipe with nothing written to it (no header "
                         "row and no data); give a CSV file, or write the data to the pipe")
    return io_module.BytesIO(data)


def _head(path: PathLike | io_module.BytesIO, size: int) -> bytes:
    if isinstance(path, io_module.BytesIO):
        return path.getvalue()[:size]
    with open(path, "rb") as handle:
        return handle.read(size)


def _netcdf_signature(path: PathLike | io_module.BytesIO) -> bool:
    """Whether a file starts like a NetCDF-3 or NetCDF-4 (HDF5) file."""
    head = _head(path, 8)
    return head.startswith((b"CDF\x01", b"CDF\x02", b"CDF\x05", b"\x89HDF\r\n\x1a\n"))


def _binary(path: PathLike | io_module.BytesIO) -> bool:
    """Whether the start of a file holds NUL bytes (no 8-bit text encoding has them)."""
    return b"\x00" in _head(path, 8192)


def _check_header(path: Any, df: pd.DataFrame, kwargs: Mapping[str, Any],
                  source: str | None = None) -> None:
    """Refuse duplicated column names, which pandas silently renames (``E``, ``E.1``)."""
    if kwargs.get("names") is not None or kwargs.get("header", "infer") not in ("infer", 0):
        return
    if not isinstance(path, str | os.PathLike | io_module.BytesIO):
        return
    suspects = [c for c in df.columns if isinstance(c, str) and "." in c
                and c.rsplit(".", 1)[1].isdigit() and c.rsplit(".", 1)[0] in df.columns]
    if not suspects:
        return
    header_kwargs = {k: v for k, v in kwargs.items() if k in _HEADER_ONLY_KWARGS}
    if isinstance(path, io_module.BytesIO):  # a pipe's content, read once into memory
        path.seek(0)
    raw = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False,
                      **header_kwargs)
    names = [str(v) for v in raw.iloc[0].tolist()] if len(raw) else []
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        shown = source or ("<pipe>" if isinstance(path, io_module.BytesIO) else os.fspath(path))
        raise ValueError(f"{shown}: duplicated column names: {', '.join(duplicated)} "
                         "(pandas would rename the second one); give each column a name")


def _open_netcdf(path: PathLike, what: str = "a NetCDF file") -> xr.Dataset:
    """Open a NetCDF file, loaded into memory and closed, with clear errors for a missing,
    empty, truncated, corrupted or non-NetCDF file."""
    _check_input_file(path, what)
    shown = os.fspath(path)
    if os.path.getsize(path) == 0:
        raise ValueError(f"{shown} is empty, not {what}")
    signature = _netcdf_signature(path)
    try:
        with xr.open_dataset(
            path, engine="netcdf4", decode_times=False, decode_timedelta=False
        ) as stored:
            # drop the file's encodings (e.g. fixed-width strings) so that writing an extended
            # dataset back cannot truncate new values
            return stored.load().drop_encoding()
    except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
        if isinstance(err, PermissionError):
            raise PermissionError(f"{shown}: permission denied") from None
        if not signature:
            raise ValueError(f"{shown} is not a NetCDF file (expected {what})") from None
        raise ValueError(f"{shown} cannot be read: it is truncated or corrupted ({err}); "
                         f"expected {what}") from None


# --------------------------------------------------------------------------------------------
# NetCDF
# --------------------------------------------------------------------------------------------


def _netcdf_attr(value: Any, owner: str, key: str) -> Any:
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, str | bytes | int | float | np.integer | np.floating):
        return value
    if isinstance(value, list | tuple | np.ndarray):
        array = np.asarray(value)
        if array.ndim <= 1 and array.dtype.kind in "biufUS":
            return array.astype(np.int8) if array.dtype.kind == "b" else array
    raise ValueError(
        f"{owner}: attribute '{key}' = {value!r} ({type(value).__name__}) cannot be stored in "
        "NetCDF; use a str, int or float (or a 1-D list of them), or remove it"
    )


def to_netcdf(ds: xr.Dataset, path: PathLike, *, overwrite: bool = False) -> pathlib.Path:
    """Write a dataset to a NetCDF-4 file atomically.

    The data are written with the ``netcdf4`` engine to a temporary file in the destination
    folder, which is then renamed to ``path``: an interrupted write never leaves a partial file
    and readers see either the old or the new file. Boolean attributes are stored as integers
    (0/1); ``ds`` itself is not modified. Dask-backed data are computed while writing.

    Parameters
    ----------
    ds : xarray.Dataset
        The dataset (any dataset, not only inputs; it is not validated).
    path : str or path-like
        The destination file.
    overwrite : bool, default False
        Replace an existing file. Without it an existing file is left untouched.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    FileExistsError
        If ``path`` exists and ``overwrite`` is false.
    ValueError
        If an attribute cannot be stored in NetCDF (e.g. ``None`` or a dict).

    Examples
    --------
    >>> ds = from_arrays([0.1, -0.2], [0.3, 0.2])
    >>> to_netcdf(ds, "set1.nc", overwrite=True)  # doctest: +SKIP
    PosixPath('set1.nc')
    """
    if not isinstance(ds, xr.Dataset):
        raise TypeError(f"expected an xarray.Dataset, got {type(ds).__name__}")
    path = pathlib.Path(path)
    refusal = f"{path} already exists; pass overwrite=True to replace it"
    if not overwrite and os.path.lexists(path):
        raise FileExistsError(refusal)
    if os.path.lexists(path):  # never destroy a device, a pipe or a read-only file
        from xuqcal.io.outputs import check_replaceable

        check_replaceable(path, "path")
    out = ds.copy(deep=False)
    out.attrs = {k: _netcdf_attr(v, "dataset", k) for k, v in ds.attrs.items()}
    for var_name, variable in out.variables.items():
        variable.attrs = {
            k: _netcdf_attr(v, f"variable '{var_name}'", k) for k, v in variable.attrs.items()
        }
    directory = path.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"cannot write {path}: the folder {directory} does not exist")
    # a short prefix of the name: the temporary name must not exceed the file system's limit
    # (255 bytes) when the final name is close to it
    tmp = directory / f".{path.name[:40]}.{secrets.token_hex(6)}.tmp"
    # Reserve the name; os.open applies the umask, so the final file gets the usual permissions.
    try:
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as err:  # e.g. a read-only file system, or /proc
        raise type(err)(err.errno, f"cannot write {path}: {err.strerror or err}; nothing was "
                        "written") from err
    try:
        try:
            out.to_netcdf(tmp, mode="w", format="NETCDF4", engine="netcdf4")
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:  # e.g. a full disk: name the file, keep the kind of error
            kept = "the old file is unchanged" if os.path.lexists(path) else \
                "no partial file was left"
            message = f"cannot write {path}: {err.strerror or err}; {kept}"
            if err.errno is None:
                raise type(err)(message) from err
            raise type(err)(err.errno, message) from err
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # atomic and fails if path appeared in the meantime
            except FileExistsError:
                raise FileExistsError(refusal) from None
            except OSError:  # no hard links on this file system
                if os.path.lexists(path):
                    raise FileExistsError(refusal) from None
                os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return path


def open_dataset(path: PathLike, *, E: str = "E", uE: str = "uE") -> xr.Dataset:
    """Read an input dataset from a NetCDF file and validate it.

    The file is loaded into memory and closed (so it can be overwritten afterwards). Times and
    time deltas are not decoded: a variable with ``units="s"`` stays a number.

    Parameters
    ----------
    path : str or path-like
        The NetCDF file, e.g. written by :func:`to_netcdf`.
    E, uE : str, optional
        Names of the error and uncertainty variables; every other data variable is a feature.

    Returns
    -------
    xarray.Dataset
        The validated dataset.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        If ``path`` does not exist or is a folder.
    ValueError
        If the file is empty, truncated, corrupted or not NetCDF, or if the content is not a
        valid input dataset; the message starts with the path.

    Examples
    --------
    >>> ds = open_dataset("set1.nc")  # doctest: +SKIP
    """
    ds = _open_netcdf(path, "a NetCDF file of an input dataset")
    try:
        return validate_dataset(ds, E=E, uE=uE)
    except ValueError as err:
        raise ValueError(f"{os.fspath(path)}: {err}") from None
