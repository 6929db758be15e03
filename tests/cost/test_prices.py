"""The price book: genai-prices' bundled table, the user's price file over it, unpriced never $0 (issue 22).

The figures compared are the published per-million prices (the providers' pricing pages, as the
bundled table has them), written out here by hand, not read back from the library.
"""

from __future__ import annotations

import socket
from datetime import datetime

import pytest

from loopsight.prices import LATEST, MAX_INPUT, PriceBook, PricesError, library_prices


def _only(rows):
    (row,) = rows
    return row


@pytest.mark.parametrize(
    ("provider", "model", "published"),
    [
        # (input, cached input, cache write, output) USD per million tokens; None: billed as input
        ("openai", "gpt-4o-mini", (0.15, 0.075, None, 0.60)),
        ("openai", "gpt-4o-mini-2024-07-18", (0.15, 0.075, None, 0.60)),  # a dated response model
        ("openai", "gpt-4o", (2.50, 1.25, None, 10.00)),
        ("anthropic", "claude-3-5-haiku", (0.80, 0.08, 1.00, 4.00)),
        ("anthropic", "claude-3-5-sonnet-20241022", (3.00, 0.30, 3.75, 15.00)),
        (None, "anthropic/claude-sonnet-4", (3.00, 0.30, 3.75, 15.00)),  # vendor/model, no provider
        ("gcp.gemini", "gemini-2.0-flash", (0.10, 0.025, None, 0.40)),  # the OTel provider name
        ("azure.ai.openai", "gpt-4o-mini", (0.15, 0.075, None, 0.60)),
    ],
)
def test_published_prices(provider, model, published):
    price = _only(PriceBook().resolve(provider, model))
    assert (price.input_mtok, price.cache_read_mtok, price.cache_write_mtok, price.output_mtok) == published
    assert price.priced and price.source.startswith("genai-prices ")


def test_tiered_prices_are_per_call_input():
    # Claude Sonnet 4.5 above 200k input tokens in a call: every token of the call pays $6 / $22.50.
    base, tier = PriceBook().resolve("anthropic", "claude-sonnet-4-5")
    assert (base.input_from, base.input_to, base.input_mtok, base.output_mtok) == (0, 200_001, 3.0, 15.0)
    assert (tier.input_from, tier.input_to, tier.input_mtok, tier.cache_read_mtok, tier.output_mtok) == (
        200_001,
        MAX_INPUT,
        6.0,
        0.6,
        22.5,
    )


def test_dated_prices_split_at_the_change():
    # Claude Sonnet 4.6 lost its long-context tier on 2026-03-13.
    rows = PriceBook().resolve("anthropic", "claude-sonnet-4-6")
    before = [r for r in rows if r.valid_until == datetime(2026, 3, 13)]
    after = [r for r in rows if r.valid_from == datetime(2026, 3, 13)]
    assert [r.input_mtok for r in before] == [3.0, 6.0]
    assert [(r.input_mtok, r.valid_until) for r in after] == [(3.0, LATEST)]


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("openai", "my-finetune-xyz"),  # a provider the table knows, a model it does not
        ("openai", "llama-3.1-8b-instruct"),  # a self-hosted model behind an OpenAI-compatible client
        ("vllm", "my-llama"),  # a provider it does not know either
        ("scripted", "scripted-model"),
        ("openai", ""),
        (None, None),
    ],
)
def test_unknown_models_are_unpriced_never_zero(provider, model):
    price = _only(PriceBook().resolve(provider, model))
    assert not price.priced
    assert (price.input_mtok, price.cache_read_mtok, price.cache_write_mtok, price.output_mtok) == (None,) * 4
    assert library_prices(provider or "", model or "x-unknown-model") is None


def test_a_provider_it_does_not_know_falls_back_on_the_model():
    # a gateway's own name: the model alone decides
    assert _only(PriceBook().resolve("my-gateway", "gpt-4o-mini")).priced_as == "openai/gpt-4o-mini"


def test_override_file_wins_over_the_library(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(
        """
# negotiated: 40% off gpt-4o on our enterprise contract
[models."gpt-4o"]
input = 1.50
output = 6.00
cached_input = 0.75

[models."llama-3.1-*"]
provider = "vllm"
input = 0.05
output = 0.10
""",
        encoding="utf-8",
    )
    book = PriceBook.from_file(path)
    gpt4o = _only(book.resolve("openai", "gpt-4o"))
    assert (gpt4o.input_mtok, gpt4o.cache_read_mtok, gpt4o.cache_write_mtok, gpt4o.output_mtok) == (
        1.5,
        0.75,
        None,
        6.0,
    )
    assert gpt4o.source == str(path)
    llama = _only(book.resolve("vllm", "Llama-3.1-70B-Instruct"))  # patterns match case-insensitively
    assert (llama.input_mtok, llama.output_mtok) == (0.05, 0.10)
    assert not _only(book.resolve("openai", "llama-3.1-70b")).priced  # the pattern names provider vllm
    assert _only(book.resolve("openai", "gpt-4o-mini")).priced_as == "openai/gpt-4o-mini"  # the library still
    assert str(path) in book.describe() and "genai-prices" in book.describe()


def test_yaml_price_file(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text(
        'models:\n  "qwen2.5-*": {input: 0.2, output: 0.6, cached_input: 0.02, cache_write: 0.25}\n', encoding="utf-8"
    )
    price = _only(PriceBook.from_file(path).resolve("", "qwen2.5-72b"))
    assert (price.input_mtok, price.cache_read_mtok, price.cache_write_mtok, price.output_mtok) == (
        0.2,
        0.02,
        0.25,
        0.6,
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[models."m"]\ninput = 1\n', "p.toml:1: model 'm': missing required key 'output'"),
        ('[models."m"]\ninput = 1\noutput = "cheap"\n', "p.toml:3: model 'm', key 'output': must be a number >= 0"),
        ('[models."m"]\ninput = -1\noutput = 2\n', "p.toml:2: model 'm', key 'input': must be a number >= 0"),
        (  # finite, but a cost of it overflowed to inf and every cost route answered 400
            '[models."m"]\ninput = 1e308\noutput = 2\n',
            "p.toml:2: model 'm', key 'input': must be at most 1,000,000",
        ),
        (
            '\n[models."m"]\ninput = 1\noutput = 2\ncached = 0.5\n',
            "p.toml:5: model 'm', key 'cached': unknown key (did you mean 'cached_input'?)",
        ),
        ('[model."m"]\ninput = 1\noutput = 2\n', "p.toml:1: unknown key 'model' (did you mean 'models'?)"),
        (
            '[models."m"]\ninput = 1\noutput = 2\nprovider = ""\n',
            "p.toml:4: model 'm', key 'provider': must be a non-empty string",
        ),
        ("[models]\nm = 3\n", "model 'm': must be a table of prices"),
        ('[models."m"\ninput = 1\n', "p.toml:1: not valid TOML"),
        (  # a dot in a bare key nests a table: gpt-4.1 came back as model 'gpt-4' with a key '1', no line
            "\n[models.gpt-4.1]\ninput = 1\noutput = 2\n",
            "p.toml:2: model 'gpt-4', key '1': unknown key (a model name with a dot is one key only when quoted: "
            '[models."gpt-4.1"])',
        ),
    ],
)
def test_bad_price_files_name_the_line_and_the_field(text, message):
    with pytest.raises(PricesError) as caught:
        PriceBook.parse(text, "p.toml")
    assert message in str(caught.value)


def test_bad_yaml_names_the_line():
    with pytest.raises(PricesError, match=r"p.yaml:3: model 'm', key 'output': must be a number"):
        PriceBook.parse("models:\n  m:\n    output: lots\n    input: 1\n", "p.yaml", yaml=True)


def test_a_yaml_exponent_without_a_dot_is_text_and_the_error_says_so():
    # YAML 1.1 (PyYAML) reads 2e-1 as the string '2e-1'; "must be a number, got '2e-1'" read as nonsense
    with pytest.raises(PricesError) as caught:
        PriceBook.parse("models:\n  m: {input: 2e-1, output: 1}\n", "p.yaml", yaml=True)
    assert "p.yaml:2: model 'm', key 'input': must be a number >= 0 (USD per million tokens), got '2e-1'" in str(
        caught.value
    )
    assert "(YAML reads 2e-1 as text: write 0.2)" in str(caught.value)
    with pytest.raises(PricesError, match=r"YAML reads 1e-7 as text: write 1\.0e-07\)"):
        PriceBook.parse("models:\n  m: {input: 1e-7, output: 1}\n", "p.yaml", yaml=True)
    with pytest.raises(PricesError, match=r"got 'cheap'$"):  # text that is no number: no hint
        PriceBook.parse("models:\n  m: {input: cheap, output: 1}\n", "p.yaml", yaml=True)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(PricesError, match="cannot read the price file"):
        PriceBook.from_file(tmp_path / "nope.toml")


def test_prices_come_from_the_package_offline(monkeypatch):
    """genai-prices reads its bundled table: no network, not even a connection attempt."""

    def refuse(*args, **kwargs):
        raise AssertionError("a price lookup tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    book = PriceBook()
    assert _only(book.resolve("openai", "gpt-4o")).input_mtok == 2.5
    assert book.rows([("openai", "gpt-4o"), ("x", "y")])[1]["input_mtok"] is None
