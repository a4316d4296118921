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
    counted = table.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    # The API URL names the provider best (DeepSeek behind an OpenAI-compatible provider); a
    # URL the table does not know (a local server) falls back to the provider's vendor.
    for where in ({"provider_api_url": api_url}, {"provider_id": provider}):
        if not next(iter(where.values())):
            continue
        try:
            return float(table.calc_price(counted, model_ref=model, **where).total_price)
        except LookupError:
            continue
    logger.debug("no price for model %r (provider %r, %s)", model, provider, api_url)
    return None
