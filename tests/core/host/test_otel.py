"""When the OpenTelemetry export is on: the standard variable, else the setting; off, the SDK
is never imported and the trail has no observer."""

from __future__ import annotations

import subprocess
import sys

import pytest

from meith_core.host.otel import otlp_endpoint


def test_the_variable_wins_then_the_setting_then_off() -> None:
    setting = {"telemetry": {"otlpEndpoint": "http://collector:4318/"}}
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}
    assert otlp_endpoint(env, setting) == "http://env:4318"
    assert otlp_endpoint({}, setting) == "http://collector:4318"
    assert otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": " "}, {}) is None
    assert otlp_endpoint({}, {"telemetry": "nonsense"}) is None


@pytest.mark.slow
def test_off_imports_nothing_and_observes_nothing(tmp_path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\nfrom meith_core.base.home import MeithHome\n"
        "from meith_core.host.runtime import Runtime\n"
        f"rt = Runtime(MeithHome(Path({str(tmp_path)!r})), load_plugins=False)\n"
        "print(rt.telemetry is None, rt.audit.observer is None,\n"
        "      any(m.startswith('opentelemetry.sdk') for m in sys.modules))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "MEITH_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split() == ["True", "True", "False"], out.stderr
