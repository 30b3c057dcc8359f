"""Where the console may listen: loopback, or elsewhere only when asked to and with TLS."""

from __future__ import annotations

import pytest

from meith_core.ui.serve import UsageError, check_bind


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_needs_nothing(host: str) -> None:
    check_bind(host, False, None, None)


def test_another_address_needs_allow_remote_and_tls() -> None:
    with pytest.raises(UsageError, match="--allow-remote"):
        check_bind("0.0.0.0", False, None, None)
    with pytest.raises(UsageError, match="--tls-cert"):
        check_bind("192.0.2.7", True, "cert.pem", None)
    check_bind("192.0.2.7", True, "cert.pem", "key.pem")
