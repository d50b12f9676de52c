"""The Python examples of the package README and of the project README run as
written (each in a scratch directory)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
READMES = [HERE.parent / "README.md", HERE.parents[2] / "README.md"]


@pytest.mark.parametrize("readme", READMES, ids=["package", "project"])
def test_readme_example_runs(readme: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, f"{readme} has no python example"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, str(readme), "exec"), {"__name__": "readme"})
    assert os.path.getsize(tmp_path / "example.hurray") > 0
