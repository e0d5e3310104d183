"""JSON numbers written exactly as JavaScript's JSON.stringify writes them (the v1 batch hash)."""

import pytest

from rstar_trainer.batch.js_json import js_number, js_stringify


@pytest.mark.parametrize(
    "x, js",
    [
        (0.0, "0"), (-0.0, "0"), (1.0, "1"), (2, "2"), (-3.5, "-3.5"), (0.1, "0.1"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"), (0.0000012, "0.0000012"), (1e21, "1e+21"), (1.5e21, "1.5e+21"), (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-0.7300000190734863, "-0.7300000190734863"), (float("nan"), "null"), (float("inf"), "null"), (2**53 + 2, "9007199254740994"),
    ],
)
def test_js_number_matches_ecmascript(x, js):
    assert js_number(x) == js


def test_js_stringify_of_a_sequence_row():
    row = ["rollout:a", [1, 2], [0, 1], [0, -0.5], 0.9999990000010001]
    assert js_stringify(row) == '["rollout:a",[1,2],[0,1],[0,-0.5],0.9999990000010001]'
    assert js_stringify({"a": "é\n\"", "b": None, "c": True}) == '{"a":"é\\n\\"","b":null,"c":true}'
