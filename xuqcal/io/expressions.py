"""The safe expression evaluator of column specifications (``E``, ``uE``, features, ``where``).

Column specifications are column names or simple expressions over columns, evaluated by
:func:`evaluate_expression`, a small evaluator built on :mod:`ast`: only a whitelist of constructs
is evaluated and user text is never passed to :func:`eval`.
"""

from __future__ import annotations

import ast
import difflib
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["evaluate_expression"]

_MAX_EXAMPLES = 5
_MAX_LISTED_COLUMNS = 40
_MAX_EXPRESSION_LENGTH = 10_000


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
