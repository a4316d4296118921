"""calculator: the quick pre-check of an integer power (exponent times the base's bit length)
refuses exactly what the size estimate refuses."""

from __future__ import annotations

import math

from jianmu_bt.tools.builtin.arithmetic_limits import power, power_bits
from jianmu_bt.tools.builtin.calculator import CalculatorError


def test_the_quick_power_bound_refuses_what_the_estimate_refuses() -> None:
    bases = [*range(-40, 41), 2**61 - 1, 3**40, -(7**30), 10**20 + 1]
    for max_bits in (1, 2, 7, 64, 100, 1000):
        for base in bases:
            for exponent in (True, *range(1, 70), 100, 999, 1000, 1001):
                expected = power_bits(base, exponent) > max_bits + 1
                try:
                    power(base, exponent, max_bits)
                    refused = False
                except CalculatorError:
                    refused = True
                assert refused is expected, (base, exponent, max_bits)


def test_float_powers_are_not_sized() -> None:
    assert power(2.0, 10, 8) == 1024.0
    assert math.isclose(float(power(2, 0.5, 8)), math.sqrt(2))
