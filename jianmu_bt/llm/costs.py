"""What a request costs: prices from a maintained table, or the ones a tree file gives.

Prices come from `genai-prices` (the `prices` extra: a price table kept up to date by its
maintainers, matched by model name, provider and API URL), loaded on the first cost asked for.
A tree file's `llm: {prices: {input: 3, output: 15}}` (US dollars per million tokens) wins over
the table, and is the only source for a model the table does not know (a local model). Without
either, a cost is unknown (None), never guessed.
"""

from __future__ import annotations

import functools
import logging
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jianmu_bt.llm.base import Usage

logger = logging.getLogger(__name__)

PER = 1_000_000  # prices are per million tokens


class Prices(BaseModel):
    """US dollars per million input and output tokens (`llm.prices` in a tree file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0, description="US dollars per million input tokens.")
    output: float = Field(ge=0, description="US dollars per million output tokens.")

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` at these prices."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output) / PER


@functools.cache
def _table() -> Any:
    try:
        import genai_prices
    except ImportError:
        return None
    return genai_prices


def table_available() -> bool:
    """True when the price table (`pip install 'jianmu-bt[prices]'`) is installed."""
    return _table() is not None


def cost_of(
    usage: Usage,
    model: str | None,
    *,
    provider: str | None = None,
    api_url: str | None = None,
    prices: Prices | None = None,
) -> float | None:
    """The cost of `usage` on `model`: from `prices` when given, else from the price table
    (matched by model, provider and API URL); None when neither knows the model."""
    if prices is not None:
        return prices.cost(usage)
    table = _table()
    if table is None or not model:
        return None
    price = _model_price(model, provider, api_url)
    if price is None:
        return None
    rates = (price.input_mtok, price.output_mtok)
    if all(rate is None or isinstance(rate, Decimal) for rate in rates):
        # Flat rates (most models): the table's numbers, without its Decimal machinery.
        per_input, per_output = (float(rate or 0) for rate in rates)
        return (usage.input_tokens * per_input + usage.output_tokens * per_output) / PER
    counted = table.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    return float(price.calc_price(counted)["total_price"])  # tiered by the request's size


@functools.lru_cache(maxsize=512)
def _model_price(model: str, provider: str | None, api_url: str | None) -> Any:
    """The price table's entry for a model (None: unknown), found once per model and provider:
    matching a name against the table costs more than the arithmetic."""
    table = _table()
    probe = table.Usage(input_tokens=1, output_tokens=1)
    # The API URL names the provider best (DeepSeek behind an OpenAI-compatible provider); a
    # URL the table does not know (a local server) falls back to the provider's vendor.
    for where in ({"provider_api_url": api_url}, {"provider_id": provider}):
        if not next(iter(where.values())):
            continue
        try:
            return table.calc_price(probe, model_ref=model, **where).model_price
        except LookupError:
            continue
    logger.debug("no price for model %r (provider %r, %s)", model, provider, api_url)
    return None
