"""Jinja2 rendering for playbook arguments and templates/ files (StrictUndefined: no silent blanks).

Both render in Jinja2's immutable sandbox: a playbook or template is configuration, so it may
read values and call their plain methods, but never reach Python internals
(`host.__class__.__init__.__globals__` runs any code on this machine) nor change the values it
reads (`vars.update(...)` would change the host's vars for every later step).

The sandbox alone bounds nothing but `range()`: `{% for %}` inside `{% for %}`, `lipsum(n=10**7)`,
`'%999999999d' | format(1)`, `'a' * 10**10` or a doubling `~` ran for minutes or took gigabytes.
So every rendering runs within TemplateLimits: loop iterations and calls are counted, every
value an expression builds (and the output) has a size limit, the expensive primitives (widths,
repeats, joins, powers) are checked BEFORE they run (a single C call cannot be interrupted), and
the wall time is checked at every step. Going past one is a TemplateLimitError naming it.
"""

from __future__ import annotations

import functools
import re
import string
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import _PassArg, generate_lorem_ipsum
from jinja2.visitor import NodeTransformer

from gpuonboard.jinjatext import is_template

MIB = 1 << 20
MAX_RANGE = 100_000  # Jinja2's own sandbox limit for range()
MAX_LIPSUM = (100, 1_000)  # paragraphs, words per paragraph
# a macro call costs about as much as ten loop iterations (~12 us): counted so, the step limit
# stops `{{ f(n-1) }}{{ f(n-1) }}` (2**n calls) in about a second, not at the wall-time limit
MACRO_STEPS = 10
# what one item of a list, tuple, set or dict costs in memory (its slot, and the small object in
# it that a filter such as batch(1) or map makes): charged so, `big | list | batch(1) | list`
# (3 million lists of one character, 250 MB, from a 3 MB text) stops at the work limit
ITEM_BYTES = 64
# the characters textwrap may copy while it cuts long words into lines (it copies the rest of
# the word for every line: quadratic, in one call); about half a second
WRAP_COPY = 1 << 33


@dataclass(frozen=True)
class TemplateLimits:
    """What one rendering of a user's template may do. A template fills in settings (a config
    file, a command's argument): these are far past any real one, and far below what hurts."""

    text: int = 4 * MIB  # the output, and any one string or list an expression builds
    work: int = 64 * MIB  # everything it builds and writes, together (bounds memory churn)
    steps: int = 1_000_000  # loop iterations and calls
    seconds: float = 10.0  # wall time
    int_bits: int = 65_536  # the largest number it may compute


LIMITS = TemplateLimits()


class TemplateLimitError(jinja2.TemplateRuntimeError):
    """A user's template went past one of its TemplateLimits (one clause naming the limit)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}; simplify the template")


def _mib(n: int) -> str:
    return f"{n / MIB:g} MiB"


class _Budget:
    """The counters of one rendering (thread-local: hosts render in parallel threads)."""

    __slots__ = ("limits", "deadline", "steps", "work")

    def __init__(self, limits: TemplateLimits) -> None:
        self.limits = limits
        self.deadline = time.monotonic() + limits.seconds
        self.steps = 0
        self.work = 0

    def tick(self, weight: int = 1) -> None:
        """One loop iteration or call (a macro call weighs MACRO_STEPS): counted, and the wall
        time checked."""
        self.steps += weight
        if self.steps > self.limits.steps:
            raise TemplateLimitError(
                f"it runs more than {self.limits.steps:,} loop iterations and calls, the most one"
                " rendering may do"
            )
        if time.monotonic() > self.deadline:
            raise TemplateLimitError(
                f"it ran longer than {self.limits.seconds:g} s, the most one rendering may take"
            )

    def charge(self, size: int) -> None:
        """`size` more bytes (a character, or ITEM_BYTES an item) built or written by this rendering."""
        self.work += size
        if self.work > self.limits.work:
            raise TemplateLimitError(
                f"it builds more than {_mib(self.limits.work)} of text and lists in all, the most one"
                " rendering may"
            )


_ACTIVE = threading.local()


def _budget() -> _Budget:
    """The budget of the rendering running in this thread (outside one, as at compile time,
    a fresh one: the size checks still apply)."""
    active: _Budget | None = getattr(_ACTIVE, "budget", None)
    return active if active is not None else _Budget(LIMITS)


@contextmanager
def _bounded(limits: TemplateLimits) -> Iterator[_Budget]:
    """Run a rendering (or a compile) under `limits`; a nested one shares the outer budget."""
    outer: _Budget | None = getattr(_ACTIVE, "budget", None)
    if outer is not None:
        yield outer
        return
    _ACTIVE.budget = budget = _Budget(limits)
    try:
        yield budget
    finally:
        _ACTIVE.budget = None


# ---------------------------------------------------------------- size checks


def _check_size(size: int) -> None:
    """Refuse, before building it, a string or list of `size` characters or items."""
    limit = _budget().limits.text
    if size > limit:
        raise TemplateLimitError(
            f"it builds a text or list longer than {_mib(limit)}, the most any one value may be"
        )


def _check_number(value: int) -> None:
    limit = _budget().limits.int_bits
    if value.bit_length() > limit:
        raise TemplateLimitError(f"it computes a number of more than {limit:,} bits, the most one may have")


_CONTAINERS = (list, tuple, dict, set, frozenset)


def _weight(value: Any) -> int:
    """What `value` costs in memory, shallowly: a character a byte, an item ITEM_BYTES."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, _CONTAINERS):
        return len(value) * ITEM_BYTES
    return 0


def _checked(value: Any) -> Any:
    """`value`, once its size is within the limits (and charged to the rendering)."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        _check_size(len(value))
        _budget().charge(_weight(value))
    elif isinstance(value, int) and not isinstance(value, bool):
        _check_number(value)
    return value


def _charged_items(items: Iterator[Any]) -> Iterator[Any]:
    """`items` (a generator that a filter such as batch or map returned), each item charged as it
    is made: whatever collects them into a list stops at the work limit, not after it."""
    budget = _budget()
    for item in items:
        budget.charge(ITEM_BYTES + _weight(item))
        yield item


def _charging(value: Any) -> Any:
    """`value`, its items charged as they come when it is an iterator (see _charged_items)."""
    return _charged_items(value) if isinstance(value, Iterator) else value


def _check_width(number: int | str) -> None:
    """A format width or precision (`%999999999d`, `{:>999999999}`): refused past the text limit."""
    limit = _budget().limits.text
    if (
        isinstance(number, str)
        and (len(number) > 12 or int(number) > limit)
        or (isinstance(number, int) and number > limit)
    ):
        raise TemplateLimitError(f"it asks for a width or precision of {number} (at most {limit:,})")


_PERCENT_SPEC = re.compile(r"%(?:\(([^)]*)\))?[#0 +-]*(\*|\d*)(?:\.(\*|\d*))?(.)?")


def _check_percent(fmt: str | bytes, values: Any) -> None:
    """`fmt % values`: every width and precision in fmt, and a `*` one's value, within limits;
    and what the fields may add (`'%(a)s' * 1000 % {'a': big}` repeats one big value)."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    items = values if isinstance(values, tuple) else (values,)
    # each field adds at most the biggest value (and a `*` the widest number): computed once,
    # the check is linear (per field, '%s' * 20000 % (...) took minutes)
    biggest = max((_sized(v) for v in items), default=0)
    widest: int | None = None  # (computed once, when a `*` first takes its width from them)
    sizes: dict[Any, int] = {}  # (a key's value, sized once however often the key repeats)
    estimate = len(text)
    for match in _PERCENT_SPEC.finditer(text):
        key, width, precision, kind = match.groups()
        if kind == "%" and not (key or width or precision):
            continue
        for number in (width, precision):
            if number == "*":
                widest = _widest(items) if widest is None else widest
                estimate += widest
            elif number:
                _check_width(number)
                estimate += int(number)
        if key is not None and isinstance(values, dict):
            if key not in sizes:
                sizes[key] = _sized(values.get(key, ""))
            estimate += sizes[key]
        else:
            estimate += biggest
        if estimate > _budget().limits.text:
            break
    _check_size(estimate)


def _widest(values: Any) -> int:
    """The biggest of the numbers among `values` (each checked as a width), else 0."""
    widest = 0
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            _check_width(value)
            widest = max(widest, value)
    return widest


def _check_format(fmt: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """`fmt.format(...)`: every width and precision in its fields within limits (a nested one,
    `{:>{}}`, takes its number from the arguments, so those are checked), and what the fields
    may add (`'{0}' * 1000` repeats one big argument)."""
    mapping = {**(args[0] if len(args) == 1 and isinstance(args[0], dict) else {}), **kwargs}
    values = [*args, *mapping.values()]
    biggest = max((_sized(v) for v in values), default=0)
    widest: int | None = None  # (computed once, when a field first takes its width from them)
    estimate = len(fmt)
    for _, field, spec, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        estimate += biggest
        for number in re.findall(r"\d+", spec or ""):
            _check_width(number)
            estimate += int(number)
        if spec and "{" in spec:
            widest = _widest(values) if widest is None else widest
            estimate += widest * spec.count("{")
        if estimate > _budget().limits.text:
            break
    _check_size(estimate)


def _check_binop(operator: str, left: Any, right: Any) -> None:
    """The operators that build big values from small ones, checked before they run."""
    sequences = str | bytes | list | tuple
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, sequences) and isinstance(times, int):
                _check_size(len(seq) * max(times, 0))
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            limit = _budget().limits.int_bits
            if right > limit or right * (abs(left).bit_length() - 1) > limit:
                raise TemplateLimitError(
                    f"it computes a number of more than {limit:,} bits, the most one may have"
                )
    elif operator == "%" and isinstance(left, str | bytes):
        _check_percent(left, right)
    elif operator == "+" and isinstance(left, sequences) and isinstance(right, sequences):
        _check_size(len(left) + len(right))


def _sized(x: Any) -> int:
    """The length of `x` as text (what a join or a format field makes of it)."""
    return len(x) if isinstance(x, str | bytes) else len(str(x))


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, key: str, default: Any) -> Any:
    """A call's argument `i` (or keyword `key`), else `default`."""
    return args[i] if len(args) > i else kwargs.get(key, default)


def _check_method(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """A str/bytes/int method whose result can be far bigger than its inputs (`'a'.center(10**9)`,
    `(1).to_bytes(10**9)`, `','.join(...)`), checked before it runs; the args to call it with."""
    owner = getattr(method, "__self__", None)
    if not isinstance(method, types.BuiltinMethodType) or not isinstance(owner, str | bytes | int):
        return args
    name = method.__name__
    width = _arg(args, kwargs, 0, {"to_bytes": "length", "expandtabs": "tabsize"}.get(name, "width"), None)
    if name in ("center", "ljust", "rjust", "zfill", "to_bytes") and isinstance(width, int):
        _check_size(width)
    elif name == "expandtabs" and isinstance(owner, str | bytes):
        tab = "\t" if isinstance(owner, str) else b"\t"
        tabsize = width if isinstance(width, int) else 8
        _check_size(len(owner) + owner.count(tab) * max(tabsize, 0))  # type: ignore[arg-type]
    elif name == "replace" and isinstance(owner, str | bytes) and len(args) >= 2:
        _check_replace(owner, args[0], args[1], _arg(args, kwargs, 2, "count", -1))
    elif name == "translate" and isinstance(owner, str) and args and isinstance(args[0], dict):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        _check_size(len(owner) * max(longest, 1))
    elif name == "join" and isinstance(owner, str | bytes) and args:
        items = list(_charging(args[0]))
        _check_size(len(owner) * max(len(items) - 1, 0) + sum(_sized(x) for x in items))
        return (items, *args[1:])
    return args


def _check_replace(owner: str | bytes, old: Any, new: Any, count: Any) -> None:
    if not isinstance(old, str | bytes) or not isinstance(new, str | bytes) or type(old) is not type(owner):
        return
    times = owner.count(old) if old else len(owner) + 1  # type: ignore[arg-type]
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    _check_size(len(owner) + times * max(len(new) - len(old), 0))


# ---------------------------------------------------------------- globals and filters


def _range(*args: int) -> range:
    """range(), at most MAX_RANGE numbers (Jinja2's sandbox raised OverflowError)."""
    numbers = range(*args)
    if len(numbers) > MAX_RANGE:
        raise TemplateLimitError(f"it asks for a range() of more than {MAX_RANGE:,} numbers")
    return numbers


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """lipsum(), at most MAX_LIPSUM paragraphs and words (its loop ran 10**7 times)."""
    paragraphs, words = MAX_LIPSUM
    if not (0 <= n <= paragraphs and 0 < min <= max <= words):
        raise TemplateLimitError(f"it asks lipsum() for more than {paragraphs} paragraphs of {words:,} words")
    return str(generate_lorem_ipsum(n=n, html=html, min=min, max=max))


Precheck = Callable[[Any, tuple[Any, ...], dict[str, Any]], tuple[Any, ...]]


def _pre_center(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    width = _arg(args, kw, 1, "width", 80)
    if isinstance(width, int):
        _check_size(max(_sized(args[0]), width))
    return args


def _pre_indent(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    width = _arg(args, kw, 1, "width", 4)
    each = width if isinstance(width, int) else len(str(width))
    text = str(args[0])
    _check_size(len(text) + (text.count("\n") + 1) * max(each, 0))
    return args


def _pre_format(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    _check_percent(str(args[0]), dict(kw) if kw else tuple(args[1:]))
    return args


def _pre_replace(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    if len(args) >= 3:
        _check_replace(str(args[0]), str(args[1]), str(args[2]), _arg(args, kw, 3, "count", None))
    return args


def _pre_join(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    from jinja2.filters import make_attrgetter

    sep, attribute = _arg(args, kw, 1, "d", ""), _arg(args, kw, 2, "attribute", None)
    items = list(args[0] if attribute is None else map(make_attrgetter(env.environment, attribute), args[0]))
    kw.pop("d", None)
    kw.pop("attribute", None)
    _check_size(len(str(sep)) * max(len(items) - 1, 0) + sum(_sized(x) for x in items))
    return (items, sep)


def _pre_count(index: int, key: str, limit: Callable[[], int]) -> Precheck:
    """A filter whose parameter `key` is a count of items it makes (batch's line count with a
    fill value, slice's number of slices)."""

    def check(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
        count = _arg(args, kw, index, key, 0)
        if isinstance(count, int) and count > limit():
            _check_size(count)
        return args

    return check


def _pre_tojson(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    indent = _arg(args, kw, 1, "indent", None)
    if isinstance(indent, int) and indent > 64:  # (each line of the JSON gets it)
        raise TemplateLimitError(f"it asks tojson for an indent of {indent} (at most 64)")
    return args


def _pre_sum(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    start = _arg(args, kw, 2, "start", 0)
    if isinstance(start, str | bytes | list | tuple):  # sum of lists: quadratic, in one C call
        items = list(_charging(args[0]))
        _check_size(len(start) + sum(len(x) for x in items if isinstance(x, str | bytes | list | tuple)))
        return (items, *args[1:])
    return args


def _pre_wordwrap(env: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
    """wordwrap runs textwrap in one call: its lines (a Python loop each, and a wrapstring
    each) are counted as steps and checked as output before it runs, and so is what it copies
    to cut a word longer than a line (the rest of the word again for every line)."""
    width, long_words = _arg(args, kw, 1, "width", 79), _arg(args, kw, 2, "break_long_words", True)
    wrapstring = _arg(args, kw, 3, "wrapstring", None)
    if not isinstance(width, int) or width < 1:
        return args  # (textwrap refuses it)
    text = str(args[0])
    # a line but the last of a paragraph plus the next one hold more than `width` characters
    lines = 2 * len(text) // width + text.count("\n") + 1
    _budget().tick(lines)
    _check_size(len(text) + lines * len(str(wrapstring if wrapstring is not None else "\n")))
    if not long_words or len(text) ** 2 // (2 * width) <= WRAP_COPY:
        return args
    copied = 0
    for word in re.finditer(rf"[^\t\n\x0b\x0c\r ]{{{width + 1},}}", text):  # (textwrap's spaces)
        copied += len(word.group()) ** 2 // (2 * width)
        if copied > WRAP_COPY:
            raise TemplateLimitError(
                f"it asks wordwrap to cut a word of {len(word.group()):,} characters into lines of"
                f" {width}, more copying than one rendering may do"
            )
    return args


PRECHECKS: dict[str, Precheck] = {
    "center": _pre_center,
    "indent": _pre_indent,
    "format": _pre_format,
    "replace": _pre_replace,
    "join": _pre_join,
    "batch": _pre_count(1, "linecount", lambda: 0),
    "slice": _pre_count(1, "slices", lambda: MAX_RANGE),
    "tojson": _pre_tojson,
    "sum": _pre_sum,
    "wordwrap": _pre_wordwrap,
}


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """`func` (a filter) counted as a step, its arguments checked before it runs (PRECHECKS) and
    its result after (a filter applied again and again, such as escaping, grows a value)."""
    precheck = PRECHECKS.get(name)
    passes = _PassArg.from_obj(func) is not None  # context/environment comes first

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _budget().tick()
        head, rest = (args[:1], args[1:]) if passes else ((), args)
        if rest:
            rest = (_charging(rest[0]), *rest[1:])
        if precheck is not None:
            rest = precheck(head[0] if head else None, rest, kwargs)
        return _checked(func(*head, *rest, **kwargs))

    return bounded


_LOOP, _VALUE, _OUTPUT = "_gpuonboard_loop", "_gpuonboard_value", "_gpuonboard_output"


class _Counted:
    """A loop's iterable, one step counted per item (its length where it has one)."""

    def __init__(self, items: Any) -> None:
        self.items = items

    def __iter__(self) -> Iterator[Any]:
        budget = _budget()
        for item in self.items:
            budget.tick()
            yield item

    def __len__(self) -> int:
        return len(self.items)


@jinja2.pass_context  # (never folded into a constant at compile time: always counted)
def _loop_filter(context: Any, value: Any) -> _Counted:
    return _Counted(value)


@jinja2.pass_context
def _value_filter(context: Any, value: Any) -> Any:
    return _checked(value)


@jinja2.pass_context
def _output_filter(context: Any, value: Any, text: int = 0) -> Any:
    """What `{{ }}` and template text write, charged: a `{% set %}` block or a macro collects
    it in a buffer that the output limit does not see. `text`: the length of the template
    text written beside `value` (charged with it: see _Guard.visit_Output)."""
    _budget().charge((len(value) if isinstance(value, str) else len(str(value))) + text)
    return value


def _internal(node: Any, name: str, lineno: int, args: list[Any] | None = None) -> nodes.Filter:
    """A call of one of our filters on `node` (None: a `{% set %}` block's own value)."""
    return nodes.Filter(node, name, args or [], [], None, None, lineno=lineno)


class _Guard(NodeTransformer):
    """Routes what grows without a call through the checks: each loop's items, each `~`, each
    `{% set %}` block's value and each piece of output."""

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = _internal(node.iter, _LOOP, node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Filter:
        self.generic_visit(node)
        return _internal(node, _VALUE, node.lineno)

    def visit_AssignBlock(self, node: nodes.AssignBlock) -> nodes.AssignBlock:
        self.generic_visit(node)
        node.filter = _internal(node.filter, _VALUE, node.lineno)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Output:
        self.generic_visit(node)
        # the template text between the expressions is of a length known now: charged by the
        # piece's first expression (or, with none, by an empty one), one call a piece of output
        # rather than one per text and expression (~2,000 a host in the HTML report)
        text = sum(len(c.data) for c in node.nodes if isinstance(c, nodes.TemplateData))
        guarded: list[nodes.Expr] = []
        for child in node.nodes:
            if isinstance(child, nodes.TemplateData):
                guarded.append(child)
                continue
            guarded.append(_internal(child, _OUTPUT, child.lineno, [nodes.Const(text)] if text else []))
            text = 0
        if text:
            guarded.insert(0, _internal(nodes.Const(""), _OUTPUT, node.lineno, [nodes.Const(text)]))
        node.nodes = guarded
        return node


class _GuardedCodeGenerator(CodeGenerator):
    """Jinja2's code generator, after _Guard rewrote the template (its documented hook)."""

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        _Guard().visit(node)
        node.set_environment(self.environment)
        super().visit_Template(node, frame)


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox with TemplateLimits: operators that build big values (`*`, `**`,
    `%`, `+`), every call and every filter are checked; loops and calls are counted."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = _GuardedCodeGenerator

    def __init__(
        self, *args: Any, filters: dict[str, Callable[..., Any]] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.globals["range"] = _range
        self.globals["lipsum"] = _lipsum
        every = {**self.filters, **(filters or {})}
        self.filters = {name: _bounded_filter(name, f) for name, f in every.items()}
        self.filters.update({_LOOP: _loop_filter, _VALUE: _value_filter, _OUTPUT: _output_filter})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _budget().tick()
        _check_binop(operator, left, right)
        return _checked(super().call_binop(context, operator, left, right))

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _budget().tick(MACRO_STEPS if isinstance(__obj, Macro) else 1)
        args = _check_method(__obj, args, kwargs)
        return _checked(super().call(__context, __obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        fmt = super().wrap_str_format(value)
        if fmt is None:
            return None
        template = str(value.__self__)

        @functools.wraps(fmt)
        def bounded(*args: Any, **kwargs: Any) -> str:
            _budget().tick()
            _check_format(template, args, kwargs)
            return str(_checked(fmt(*args, **kwargs)))

        return bounded


class _BoundedLoader(jinja2.FileSystemLoader):
    """FileSystemLoader that refuses, before reading it, a template file past the text limit."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        import os
        import posixpath

        from jinja2.loaders import split_template_path

        pieces = split_template_path(template)
        for root in self.searchpath:
            filename = posixpath.join(root, *pieces)
            if os.path.isfile(filename):
                if os.path.getsize(filename) > LIMITS.text:
                    raise TemplateLimitError(
                        f"the template file {filename} is larger than {_mib(LIMITS.text)}, the most a"
                        " template may be"
                    )
                break
        return super().get_source(environment, template)


def _sh(value: Any) -> str:
    """`{{ x | sh }}`: one shell word (a file meant to be sourced stays data: quotes, `$(...)`)."""
    from gpuonboard.shell import quote

    return quote("" if value is None else str(value))


@lru_cache(maxsize=8)
def _file_env(roots: tuple[str, ...]) -> jinja2.Environment:
    return BoundedSandbox(
        loader=_BoundedLoader(list(roots)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        filters={"sh": _sh},
    )


_STRING_ENV = BoundedSandbox(undefined=jinja2.StrictUndefined, autoescape=False, filters={"sh": _sh})
# Hosts render in parallel threads: without a lock, the first 50 hosts all miss the caches at
# once and each compiles the same template (a Jinja2 compile costs milliseconds of CPU).
_COMPILE = threading.Lock()


@lru_cache(maxsize=512)
def _compiled_unlocked(text: str) -> jinja2.Template:
    return _STRING_ENV.from_string(text)


def _compiled(text: str) -> jinja2.Template:
    """Compile each argument template once per run, not once per host (50 hosts, 1 compile)."""
    with _COMPILE:
        return _compiled_unlocked(text)


def _render(template: jinja2.Template, context: dict[str, Any], limits: TemplateLimits) -> str:
    """The template's output, streamed so that it stops past the output limit."""
    with _bounded(limits) as budget:
        parts, size = [], 0
        for part in template.generate(**context):
            size += len(part)
            if size > limits.text:
                raise TemplateLimitError(
                    f"its output is longer than {_mib(limits.text)}, the most one rendering may write"
                )
            budget.tick()
            parts.append(part)
        return "".join(parts)


def render_file(project: Path, src: str, *, limits: TemplateLimits = LIMITS, **context: Any) -> str:
    """Render templates/<src> of the project (else the shipped templates)."""
    from gpuonboard.resources import search_dirs

    roots = tuple(str(d) for d in search_dirs(project, "templates"))
    with _COMPILE, _bounded(limits):  # Jinja2 caches the compiled file (and re-checks its mtime)
        template = _file_env(roots).get_template(src)
    return _render(template, context, limits)


def find_template(project: Path, src: str) -> bool:
    """True when templates/<src> exists for render_file (the project's or the shipped copy); a
    file past the size limit is a usage error (exit 2, before any connection)."""
    from gpuonboard.errors import UsageError
    from gpuonboard.resources import search_dirs

    roots = tuple(str(d) for d in search_dirs(project, "templates"))
    env = _file_env(roots)
    assert env.loader is not None
    try:
        env.loader.get_source(env, src)
    except jinja2.TemplateNotFound:
        return False
    except TemplateLimitError as exc:
        raise UsageError(f"{exc.message}.") from None
    return True


def render_value(value: Any, context: dict[str, Any], limits: TemplateLimits = LIMITS) -> Any:
    """Render every string inside a YAML value (dicts and lists recursively), all of it within
    one rendering's limits."""
    with _bounded(limits):
        return _render_value(value, context, limits)


def _render_value(value: Any, context: dict[str, Any], limits: TemplateLimits) -> Any:
    if isinstance(value, str):
        if not is_template(value):
            return value
        return _render(_compiled(value), context, limits)
    if isinstance(value, dict):
        return {k: _render_value(v, context, limits) for k, v in value.items()}
    if isinstance(value, list):
        return [_render_value(v, context, limits) for v in value]
    return value
