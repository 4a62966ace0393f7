"""The public surface as a type checker sees it.

``@workhorse.job`` gives a ``JobDefinition[P, R]`` of the handler's
parameters and result, so mypy checks ``enqueue`` and ``options(...).enqueue``
calls against the handler. ``user_code.py`` must pass ``mypy --strict``;
every line of ``user_code_misuse.py`` marked ``# expect: <code>`` must be
reported with that code, and nothing else. Were the decorator typed ``Any``,
the second test would find no errors and fail.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
TYPED_PAGES = ["getting-started.md", "migrating.md"]
"""Pages whose examples a user would copy into typed code: together, each
page's ```python blocks must pass ``mypy --strict``."""
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
EXPECT = re.compile(r"#\s*expect:\s*([a-z-]+)")
REPORTED = re.compile(r"^[^:]+:(\d+): error: .*\[([a-z-]+)\]$")


def mypy(path: Path) -> subprocess.CompletedProcess[str]:
    """mypy on one file of user code, strict as pyproject.toml configures it."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_typed_user_code_passes_the_checker():
    run = mypy(HERE / "user_code.py")
    assert run.returncode == 0, run.stdout + run.stderr


def test_misuse_of_a_job_is_reported_on_each_marked_line_and_nowhere_else():
    source = HERE / "user_code_misuse.py"
    expected = {
        (number, match.group(1))
        for number, line in enumerate(source.read_text().splitlines(), start=1)
        if (match := EXPECT.search(line))
    }
    run = mypy(source)
    reported = {
        (int(match.group(1)), match.group(2))
        for line in run.stdout.splitlines()
        if (match := REPORTED.match(line))
    }
    assert run.returncode == 1, run.stdout + run.stderr
    assert reported == expected, run.stdout


@pytest.mark.parametrize("page", TYPED_PAGES)
def test_the_examples_of_the_page_pass_the_checker(page, tmp_path):
    code = BLOCK.findall((ROOT / "docs" / page).read_text())
    assert code, f"{page} has no python example"
    module = tmp_path / ("page_" + page.removesuffix(".md").replace("-", "_") + ".py")
    module.write_text("\n".join(code))
    run = mypy(module)
    assert run.returncode == 0, run.stdout + run.stderr
