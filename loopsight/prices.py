"""Model prices: the maintained table of ``genai-prices`` (shipped in its package, read offline)
and the user's price file over it, as rows the stores price each model call with when they derive it.

A :class:`PriceBook` answers, for a ``(provider, model)`` pair as spans name it, the USD prices
per million tokens of input, cached input (cache read), cache write and output — one row per
date range (a model's price changes on a day) and per input tier (a call above a tier's input
threshold pays the tier's prices for all its tokens, as providers bill). A pair no source knows
is *unpriced*: one row without prices, never $0. The stores keep these rows in
``model_prices`` (:data:`loopsight.model.MODEL_PRICES`), rewritten when a writer opens and
extended as new pairs arrive; the calls' and runs' costs stored from them are computed again
when the rows change, so a corrected price file changes every figure, history included, on
restart (``docs/cost.md``).

Token convention (every store, every producer): a call's input tokens *include* its cached and
cache-write tokens (OpenTelemetry GenAI's ``gen_ai.usage.input_tokens``); the cost of a call is

    (input - cache_read - cache_write) x input price + cache_read x cached price
    + cache_write x cache-write price + output x output price

where a cache unit without a price of its own is billed as plain input (as ``genai-prices`` does).

Example:
    >>> book = PriceBook.parse('''
    ... [models."my-llama-*"]
    ... input = 0.20
    ... output = 0.60
    ... cached_input = 0.05
    ... ''', "prices.toml")
    >>> [(p.input_mtok, p.cache_read_mtok, p.cache_write_mtok, p.output_mtok) for p in book.resolve("vllm", "my-llama-70b")]
    [(0.2, 0.05, None, 0.6)]
    >>> book.resolve("openai", "no-such-model")[0].priced
    False
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import math
import re
import threading
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from loopsight.errors import LoopsightError

EARLIEST = datetime(1970, 1, 1)
LATEST = datetime(2200, 1, 1)
"""The open ends of a price's date range (ClickHouse's DateTime64 holds both)."""
MAX_INPUT = 2**62
"""The open end of the last input tier."""
MAX_PRICE = 1_000_000.0
"""The most a price file may charge, USD per million tokens ($1 a token: thousands of times any model's)."""

UNITS = ("input", "cached_input", "cache_write", "output")
"""The keys of a price file entry (USD per million tokens)."""
_LIBRARY_KEYS = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "output_mtok")

PROVIDER_IDS: Mapping[str, str | None] = {
    # OpenTelemetry GenAI gen_ai.provider.name values genai-prices does not match by itself
    "azure.ai.openai": "azure",
    "azure.ai.inference": "azure",
    "az.ai.openai": "azure",
    "az.ai.inference": "azure",
    "gcp.gen_ai": "google",
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "vertexai": "google",
    "x_ai": "x-ai",
    "mistral_ai": "mistral",
    "aws.bedrock": "aws",
}
"""Provider names as producers write them (OTel GenAI, OpenInference) -> genai-prices provider ids."""


class PricesError(LoopsightError, ValueError):
    """A price file that cannot be used; the message names the file, line, model pattern and key."""


@dataclass(frozen=True)
class Price:
    """The prices of one (provider, model) pair for calls started in ``[valid_from, valid_until)``
    whose input tokens are in ``[input_from, input_to)``; USD per million tokens. All four
    ``None``: unpriced. A cache price ``None`` on a priced row: that cache unit is billed as input.
    """

    valid_from: datetime = EARLIEST
    valid_until: datetime = LATEST
    input_from: int = 0
    input_to: int = MAX_INPUT
    input_mtok: float | None = None
    cache_read_mtok: float | None = None
    cache_write_mtok: float | None = None
    output_mtok: float | None = None
    priced_as: str | None = None
    source: str | None = None

    @property
    def priced(self) -> bool:
        return self.input_mtok is not None


UNPRICED = (Price(),)


@dataclass(frozen=True)
class Override:
    """One entry of a price file: a model pattern (and optional provider pattern) and its prices."""

    pattern: str
    provider: str | None
    input: float
    output: float
    cached_input: float | None
    cache_write: float | None
    origin: str

    def matches(self, provider: str, model: str) -> bool:
        """Glob match (``*``, ``?``, ``[...]``), case-insensitive, on the whole name."""
        if not fnmatch.fnmatchcase(model.lower(), self.pattern.lower()):
            return False
        return self.provider is None or fnmatch.fnmatchcase(provider.lower(), self.provider.lower())

    def price(self) -> Price:
        return Price(
            input_mtok=self.input,
            cache_read_mtok=self.cached_input,
            cache_write_mtok=self.cache_write,
            output_mtok=self.output,
            priced_as=f"{self.pattern}" if self.provider is None else f"{self.provider}/{self.pattern}",
            source=self.origin,
        )


class PriceBook:
    """Prices for every (provider, model) pair: the price file's entries first (first match in
    file order), then ``genai-prices``; resolved once per pair and kept.

    Example:
        >>> PriceBook().resolve("openai", "gpt-4o-mini")[0].priced_as
        'openai/gpt-4o-mini'
    """

    def __init__(self, overrides: Iterable[Override] = (), *, library: bool = True, origin: str | None = None) -> None:
        self.overrides = tuple(overrides)
        self.library = library
        self.origin = origin
        self._resolved: dict[tuple[str, str], tuple[Price, ...]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | Path | None) -> PriceBook:
        """The book of a price file (TOML, or YAML for ``.yaml`` / ``.yml``); ``None``: the library alone.

        Raises :class:`PricesError` naming the file, the line and the field that is wrong.
        """
        if path is None:
            return cls()
        origin = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise PricesError(f"{origin}: cannot read the price file: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise PricesError(f"{origin}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        return cls.parse(text, origin, yaml=Path(path).suffix.lower() in (".yaml", ".yml"))

    @classmethod
    def parse(cls, text: str, origin: str = "<prices>", *, yaml: bool = False) -> PriceBook:
        """The book of a price file's text (see :meth:`from_file`).

        Example:
            >>> PriceBook.parse('[models."x"]\\ninput = 1', "p.toml")
            Traceback (most recent call last):
            ...
            loopsight.prices.PricesError: p.toml:1: model 'x': missing required key 'output' (USD per million output tokens)
        """
        document, locate = _load_yaml(text, origin) if yaml else _load_toml(text, origin)
        return cls(_overrides(document, locate, origin, yaml=yaml), origin=origin)

    def describe(self) -> str:
        """Where prices come from, for logs: ``genai-prices 0.2.3`` and the file."""
        parts = [f"genai-prices {library_version()}"] if self.library else []
        if self.origin:
            parts.insert(0, f"{self.origin} ({len(self.overrides)} model patterns)")
        return " over ".join(parts) if parts else "no prices"

    def resolve(self, provider: str | None, model: str | None) -> tuple[Price, ...]:
        """The price rows of a pair as spans name it (``None`` or ``""``: not given); never empty."""
        key = (provider or "", model or "")
        with self._lock:
            found = self._resolved.get(key)
        if found is not None:
            return found
        found = self._lookup(*key)
        with self._lock:
            self._resolved[key] = found
        return found

    def _lookup(self, provider: str, model: str) -> tuple[Price, ...]:
        if not model:
            return UNPRICED
        for override in self.overrides:
            if override.matches(provider, model):
                return (override.price(),)
        if self.library:
            return library_prices(provider, model) or UNPRICED
        return UNPRICED

    def rows(self, pairs: Iterable[tuple[str | None, str | None]]) -> list[dict[str, Any]]:
        """The ``model_prices`` rows of ``pairs`` (:data:`loopsight.model.MODEL_PRICES` columns).

        Example:
            >>> [r["priced_as"] for r in PriceBook().rows([("openai", "gpt-4o"), ("", "nope")])]
            ['openai/gpt-4o', None]
        """
        out = []
        for provider, model in dict.fromkeys((p or "", m or "") for p, m in pairs):
            for price in self.resolve(provider, model):
                out.append({"provider": provider, "model": model, **price.__dict__})
        return out


_DEFAULT: PriceBook | None = None


def default_book() -> PriceBook:
    """The book without a price file (``genai-prices`` alone), shared by the process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PriceBook()
    return _DEFAULT


def library_version() -> str:
    """The installed ``genai-prices`` version, or ``"missing"``."""
    from importlib import metadata

    try:
        return metadata.version("genai-prices")
    except metadata.PackageNotFoundError:
        return "missing"


# -- genai-prices ------------------------------------------------------------------------------


def library_prices(provider: str, model: str) -> tuple[Price, ...] | None:
    """The ``genai-prices`` rows of a pair, or ``None`` when it does not know the model there.

    A provider the library does not know (a gateway, a self-hosted server's name) is ignored and
    the model matched alone; a provider it knows that has no such model leaves the pair
    unpriced (a self-hosted ``llama`` behind an OpenAI-compatible client is not priced as
    some cloud's). ``vendor/model`` names (LiteLLM, OpenRouter style) are split.

    Example:
        >>> [(p.input_mtok, p.output_mtok) for p in library_prices("anthropic", "claude-3-5-sonnet-20241022")]
        [(3.0, 15.0)]
    """
    try:
        from genai_prices.data_snapshot import find_provider_by_id, get_snapshot
    except ImportError:  # the instrumentation alone: no prices (the collector extra installs it)
        return None
    snapshot = get_snapshot()
    wanted = PROVIDER_IDS.get(provider.lower(), provider.lower()) if provider else None
    if wanted is not None and find_provider_by_id(snapshot.providers, wanted) is None:
        wanted = None
    attempts: list[tuple[str | None, str]] = [(wanted, model)]
    if "/" in model:  # "openai/gpt-4o-mini" (LiteLLM, Google ADK): the vendor's prefix, then the model
        attempts += [("litellm", model), (wanted, model.split("/", 1)[1])]
    for provider_id, ref in attempts:
        try:
            found, info = snapshot.find_provider_model(ref, None, provider_id, None)
        except LookupError:
            continue
        return _versions(info, f"{found.id}/{info.id}", f"genai-prices {library_version()}")
    return None


def _versions(info: Any, priced_as: str, source: str) -> tuple[Price, ...] | None:
    """One row per date range and input tier of a library model."""
    from genai_prices.types import ConditionalPrice, ModelPrice, StartDateConstraint

    prices = info.prices
    if isinstance(prices, ModelPrice):
        dated: list[tuple[date | None, Any]] = [(None, prices)]
    else:
        conditional: list[ConditionalPrice] = list(prices)
        starts = sorted({c.constraint.start_date for c in conditional if isinstance(c.constraint, StartDateConstraint)})
        dated = []
        for day in [None, *starts]:
            chosen = conditional[0].prices  # the library's rule: the last active one, else the first
            for candidate in reversed(conditional):
                constraint = candidate.constraint
                if constraint is None or (
                    isinstance(constraint, StartDateConstraint) and day is not None and day >= constraint.start_date
                ):
                    chosen = candidate.prices  # time-of-day (off-peak) prices are not applied
                    break
            if not dated or dated[-1][1] != chosen:
                dated.append((day, chosen))
    # A version whose token prices equal the one before (another unit changed) extends it.
    versions: list[tuple[datetime, list[Price]]] = []
    for day, model_price in dated:
        valid_from = EARLIEST if day is None else datetime(day.year, day.month, day.day)
        tiers = _tiers(model_price, priced_as, source)
        if not versions or versions[-1][1] != tiers:
            versions.append((valid_from, tiers))
    rows: list[Price] = []
    for i, (valid_from, tiers) in enumerate(versions):
        valid_until = versions[i + 1][0] if i + 1 < len(versions) else LATEST
        rows += [replace(t, valid_from=valid_from, valid_until=valid_until) for t in tiers]
    if not any(r.priced for r in rows):
        return None
    return tuple(rows)


def _tiers(model_price: Any, priced_as: str, source: str) -> list[Price]:
    from genai_prices.types import TieredPrices

    values = {key: getattr(model_price, key, None) for key in _LIBRARY_KEYS}
    if values["input_mtok"] is None and values["output_mtok"] is None:
        return [Price()]  # priced in other units only (images, seconds): not by tokens
    # The library's cliff rule: above a tier's start (input tokens of the call) every unit pays the tier price.
    starts = sorted({t.start for v in values.values() if isinstance(v, TieredPrices) for t in v.tiers})
    bounds = [0, *(s + 1 for s in starts), MAX_INPUT]
    rows = []
    for low, high in itertools.pairwise(bounds):
        per_unit = {}
        for key, value in values.items():
            if isinstance(value, TieredPrices):
                applied = value.base
                for tier in reversed(value.tiers):
                    if low > tier.start:
                        applied = tier.price
                        break
                value = applied
            per_unit[key] = None if value is None else float(value)
        rows.append(
            Price(
                input_from=low,
                input_to=high,
                input_mtok=per_unit["input_mtok"] or 0.0,
                cache_read_mtok=per_unit["cache_read_mtok"],
                cache_write_mtok=per_unit["cache_write_mtok"],
                output_mtok=per_unit["output_mtok"] or 0.0,
                priced_as=priced_as,
                source=source,
            )
        )
    return rows


# -- price files -------------------------------------------------------------------------------

Locate = Any  # (pattern: str | None, key: str | None) -> int | None, the 1-based line


def _load_toml(text: str, origin: str) -> tuple[Any, Locate]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        where = f"{origin}:{match.group(1)}" if match else origin
        raise PricesError(f"{where}: not valid TOML: {exc}") from None
    lines = text.splitlines()

    def locate(pattern: str | None, key: str | None) -> int | None:
        if pattern is None:
            for number, line in enumerate(lines, 1):
                if key is not None and re.match(rf"^\s*\[?\s*{re.escape(key)}\b", line):
                    return number
            return None
        # "pattern", 'pattern', .pattern] or .pattern. (a bare name with a dot: a table inside the entry)
        quoted = re.compile(rf"""(["']){re.escape(pattern)}\1|\.{re.escape(pattern)}\s*[\].]""")
        start = next((n for n, line in enumerate(lines, 1) if quoted.search(line)), None)
        if start is None or key is None:
            return start
        if "{" in lines[start - 1]:
            return start  # an inline table: one line
        for number in range(start + 1, len(lines) + 1):
            line = lines[number - 1]
            if re.match(r"^\s*\[", line):
                break
            if re.match(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
                return number
        return start

    return document, locate


def _load_yaml(text: str, origin: str) -> tuple[Any, Locate]:
    try:
        import yaml
    except ImportError:
        raise PricesError(
            f"{origin}: reading a YAML price file needs PyYAML (pip install pyyaml), or use TOML"
        ) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]  # the parser's text runs to six lines
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise PricesError(f"{where}: not valid YAML: {problem}{column}") from None

    def line_of(mapping: Any, name: str) -> tuple[int | None, Any]:
        if isinstance(mapping, yaml.MappingNode):
            for k, v in mapping.value:
                if isinstance(k, yaml.ScalarNode) and k.value == name:
                    return k.start_mark.line + 1, v
        return None, None

    def locate(pattern: str | None, key: str | None) -> int | None:
        if pattern is None:
            return line_of(node, key)[0] if key is not None else None
        _, models = line_of(node, "models")
        start, entry = line_of(models, pattern)
        if key is None or start is None:
            return start
        return line_of(entry, key)[0] or start

    return document, locate


def _overrides(document: Any, locate: Locate, origin: str, *, yaml: bool = False) -> list[Override]:
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise PricesError(f'{origin}: a price file is a table of model patterns: models."<pattern>" = {{...}}')
    for key in document:
        if key != "models":
            hint = " (did you mean 'models'?)" if difflib.get_close_matches(str(key), ["models"], 1) else ""
            raise PricesError(
                f"{_at(origin, locate(None, str(key)))}: unknown key {key!r}{hint}; prices go under [models]"
            )
    models = document.get("models", {})
    if not isinstance(models, dict):
        raise PricesError(f"{_at(origin, locate(None, 'models'))}: 'models' must be a table of model patterns")
    out = []
    for pattern, entry in models.items():
        out.append(_override(str(pattern), entry, locate, origin, yaml=yaml))
    return out


_YAML_TEXT_EXPONENT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+$")
"""A number with an exponent that PyYAML (YAML 1.1) left as text: one without a dot or a sign (``2e-1``, ``1.5e5``)."""


def _at(origin: str, line: int | None) -> str:
    return f"{origin}:{line}" if line else origin


def _override(pattern: str, entry: Any, locate: Locate, origin: str, *, yaml: bool = False) -> Override:
    def fail(key: str | None, message: str) -> PricesError:
        what = f"model {pattern!r}" + (f", key {key!r}" if key else "")
        return PricesError(f"{_at(origin, locate(pattern, key))}: {what}: {message}")

    if not pattern.strip():
        raise fail(None, "the model pattern is empty")
    if not isinstance(entry, dict):
        raise fail(None, f"must be a table of prices (input = ..., output = ...), got {entry!r}")
    allowed = (*UNITS, "provider")
    for key in entry:
        if key not in allowed:
            if isinstance(entry[key], dict):  # [models.gpt-4.1]: TOML splits a bare name at its dots
                quote = f'[models."{pattern}.{key}"]'
                raise fail(str(key), f"unknown key (a model name with a dot is one key only when quoted: {quote})")
            hint = difflib.get_close_matches(str(key), allowed, 1)
            raise fail(str(key), "unknown key" + (f" (did you mean {hint[0]!r}?)" if hint else ""))

    def number(key: str, required: bool) -> float | None:
        if key not in entry:
            if required:
                raise fail(None, f"missing required key {key!r} (USD per million {key} tokens)")
            return None
        value = entry[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            hint = ""
            if yaml and isinstance(value, str) and _YAML_TEXT_EXPONENT.match(value):  # YAML 1.1: 2e-1 is text
                written = repr(float(value))
                written = written.replace("e", ".0e") if "e" in written and "." not in written else written
                hint = f" (YAML reads {value} as text: write {written})"
            raise fail(key, f"must be a number >= 0 (USD per million tokens), got {value!r}{hint}")
        if value > MAX_PRICE:  # a cost must stay finite when multiplied by any token count
            raise fail(key, f"must be at most {MAX_PRICE:,.0f} (USD per million tokens), got {value!r}")
        return float(value)

    provider = entry.get("provider")
    if provider is not None and (not isinstance(provider, str) or not provider.strip()):
        raise fail("provider", f"must be a non-empty string (a provider name or pattern), got {provider!r}")
    input_price = number("input", True)
    output_price = number("output", True)
    assert input_price is not None and output_price is not None
    return Override(
        pattern=pattern,
        provider=provider,
        input=input_price,
        output=output_price,
        cached_input=number("cached_input", False),
        cache_write=number("cache_write", False),
        origin=origin,
    )
