"""What `--net` values mean, and the gate's decision for each destination."""

from __future__ import annotations

import pytest

from meith_core.confine.destinations import DestinationError, parse_destinations
from meith_core.confine.gate import NetworkGate


def test_destinations_parse_and_match() -> None:
    rules = parse_destinations(["pypi.org,*.pythonhosted.org:443", "[::1]:8080", "10.0.0.1"])
    assert [str(r) for r in rules] == [
        "pypi.org",
        "*.pythonhosted.org:443",
        "[::1]:8080",
        "10.0.0.1",
    ]
    gate = NetworkGate(rules)
    assert gate.decide("pypi.org", 443) is None
    assert gate.decide("PyPI.org.", 80) is None
    assert gate.decide("files.pythonhosted.org", 443) is None
    assert gate.decide("pythonhosted.org", 443) is not None  # subdomains only
    assert gate.decide("files.pythonhosted.org", 80) is not None
    assert gate.decide("evilpythonhosted.org", 443) is not None
    assert gate.decide("::1", 8080) is None
    reason = gate.decide("example.com", 443)
    assert reason is not None
    assert "--net example.com:443" in reason
    assert NetworkGate(parse_destinations(["any"])).decide("example.com", 1) is None
    for bad in ("exa mple.com", "host:0", "host:99999", "[::1", "a:b:c:d]"):
        with pytest.raises(DestinationError):
            parse_destinations([bad])
