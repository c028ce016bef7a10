"""Cost per million input / output tokens (issue 28, slice 4): the hour is split, never lost or
double counted, and the split follows where the GPU time goes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.core.errors import InvalidConfiguration
from service.core.pricing.token_cost import BLEND_INPUT_PER_OUTPUT, token_costs

pos = st.floats(min_value=1e-3, max_value=1e7, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(pos, pos, pos, st.floats(min_value=0.0, max_value=1.0))
def test_the_hour_is_paid_exactly_once(per_hour: float, tin: float, tout: float, share: float) -> None:
    c = token_costs(per_hour, input_tokens_per_s=tin, output_tokens_per_s=tout, prefill_time_share=share)
    paid_per_s = (tin * c.per_million_input + tout * c.per_million_output) / 1e6
    assert paid_per_s == pytest.approx(per_hour / 3600.0, rel=1e-9)
    blend = (BLEND_INPUT_PER_OUTPUT * c.per_million_input + c.per_million_output) / (
        BLEND_INPUT_PER_OUTPUT + 1
    )
    assert c.per_million_blended == pytest.approx(blend)
    assert min(c.per_million_input, c.per_million_output) <= c.per_million_blended
    assert c.per_million_blended <= max(c.per_million_input, c.per_million_output) * (1 + 1e-12)


def test_bad_inputs_name_the_field() -> None:
    with pytest.raises(InvalidConfiguration) as exc:
        token_costs(10.0, input_tokens_per_s=1.0, output_tokens_per_s=1.0, prefill_time_share=1.5)
    assert exc.value.field == "prefill_time_share"
    with pytest.raises(InvalidConfiguration) as exc:
        token_costs(10.0, input_tokens_per_s=0.0, output_tokens_per_s=1.0, prefill_time_share=0.5)
    assert exc.value.field == "output_tokens_per_s"
