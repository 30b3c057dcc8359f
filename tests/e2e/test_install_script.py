"""install.py's decisions that need no virtual environment made: what it refuses and why, and
how it names what it installs. (The installs themselves run in test_readme_walkthrough.py; the
dev environment is the README's test command, which CI runs.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def install() -> ModuleType:
    spec = importlib.util.spec_from_file_location("meith_install_script", ROOT / "install.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_python_without_ensurepip_is_told_to_install_python3_venv(
    install: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    """Debian's python3 without python3-venv: said before anything is made."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        install.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ensurepip" else real(name, *a),
    )
    assert install.main(["--prefix", str(tmp_path / "venv"), "--bin-dir", str(tmp_path)]) == 1
    assert "sudo apt install python3-venv" in capsys.readouterr().err
    assert not (tmp_path / "venv").exists()
    assert install.main(["--dev"]) == 1
    assert "python3-venv" in capsys.readouterr().err


def test_a_python_older_than_the_oldest_supported_is_refused(
    install: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(install, "OLDEST", (sys.version_info[0] + 1, 0, 0))
    assert install.main(["--dev"]) == 1
    assert "or newer; this is" in capsys.readouterr().err


def test_dev_takes_no_packages(install: ModuleType) -> None:
    with pytest.raises(SystemExit) as exited:
        install.main(["--dev", "./my-plugin"])
    assert exited.value.code == 2


def test_a_package_argument_is_named_by_its_distribution(
    install: ModuleType, tmp_path: Path
) -> None:
    project = tmp_path / "my-plugin"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "meith-weather"\nversion = "1"\n')
    assert install._dist_of(str(project)) == "meith-weather"
    assert install._dist_of("meith-weather[extra]>=0.2,<1") == "meith-weather"
    assert install._dist_of(str(tmp_path / "no-project")) is None
