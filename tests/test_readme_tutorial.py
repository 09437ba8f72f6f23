"""The README's five-minute tutorial runs as written (audit DD2).

The tutorial's Python block must make every file its shell lines read, and every option its
shell lines give must be an option of that command: a newcomer types them literally.
"""

import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from sdcbayes.cli import cli

README = Path(__file__).resolve().parents[1] / "README.md"


def _tutorial() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## A five-minute tutorial")
    return text[start:text.index("\n## ", start + 1)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _tutorial(), flags=re.S)


def _commands() -> list[list[str]]:
    """The tutorial's ``$S <command> ...`` lines, continuation lines joined, comments dropped."""
    sh = _blocks("sh")[0]
    joined = re.sub(r"\\\n", " ", sh)
    return [shlex.split(line)[1:] for line in joined.splitlines() if line.startswith("$S ")]


def test_tutorial_python_block_writes_every_file_the_commands_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (code,) = _blocks("python")[:1]
    exec(compile(code, "README tutorial", "exec"), {})  # noqa: S102 - the README's own code
    read = {args[1] for args in _commands()}
    assert read == {"survey.sav", "domains.csv"}
    for name in read | {"survey2.csv"}:
        assert (tmp_path / name).is_file(), name
    domains = pd.read_csv(tmp_path / "domains.csv")
    assert len(domains) == 108  # 12 regions x 9 age groups, all sampled
    assert (domains["y"] <= domains["n"]).all() and (domains["n"] <= domains["N"]).all()
    assert domains["y"].sum() > 0 and (domains["N"] % 1 == 0).all()


@pytest.mark.parametrize("args", _commands(), ids=lambda a: a[0] + ":" + a[-1])
def test_tutorial_command_options_exist(args):
    command = cli.commands[args[0]]
    known = {opt for p in command.params for opt in p.opts + p.secondary_opts}
    given = {a.split("=")[0] for a in args if a.startswith("--")}
    assert given, args
    assert given <= known, sorted(given - known)
