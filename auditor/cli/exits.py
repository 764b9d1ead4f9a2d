"""Each command's "Exit codes:" paragraph, made from the enum (auditor/exit_codes.py).

    @app.command()
    @exits({OK: "the canary showed within --slo", PERSISTENT: "over the SLO", USAGE: None})
    def probe(...): ...

lists the codes the command can return, each in the command's own words or (None) the enum's,
at the end of its `--help`. The paragraph is a `\\b` block (click keeps its lines as they are):
wrapped here, to fit an 80-column terminal under click's two-space indent.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from auditor.exit_codes import ExitCode

F = TypeVar("F", bound=Callable[..., Any])
Codes = Mapping[ExitCode, str | None]  # a command's codes: its own words, or None (the enum's)
WIDTH = 78  # click indents a command's help by two columns: 80 in all
INDENT = 4  # "  0 " before each meaning


def words(codes: Codes) -> dict[ExitCode, str]:
    """Each code's meaning as the command says it, in the codes' order."""
    return {code: codes[code] or code.meaning for code in sorted(codes)}


def paragraph(codes: Codes, title: str = "Exit codes:") -> str:
    """The codes as a block click does not rewrap: the title, then one entry per code."""
    lines = ["\b", title]
    for code, meaning in words(codes).items():
        lines += textwrap.wrap(
            meaning,
            WIDTH,
            initial_indent=f"  {int(code)} ",
            subsequent_indent=" " * INDENT,
            break_on_hyphens=False,
        )
    return "\n".join(lines)


def exits(codes: Codes, title: str = "Exit codes:") -> Callable[[F], F]:
    """A command's docstring with its exit codes' paragraph at the end; the codes kept on the
    command (`exit_codes`) for the tests to check its help against."""

    def wrap(fn: F) -> F:
        doc = inspect.cleandoc(fn.__doc__ or "")
        fn.__doc__ = f"{doc}\n\n{paragraph(codes, title)}".lstrip()
        fn.exit_codes = dict(codes)  # type: ignore[attr-defined]
        return fn

    return wrap


# `auditor scan`'s codes, a contract schedulers act on (docs/scheduling.md); a report's own
SCAN: Codes = {
    ExitCode.OK: "no persistent divergence (in-flight findings allowed)",
    ExitCode.PERSISTENT: "persistent divergence or unreadable rows",
    ExitCode.USAGE: None,
    ExitCode.INCOMPLETE: None,
    ExitCode.STALLED: None,
    ExitCode.OUTDATED: None,
    ExitCode.STORE_SMALLER: "the store is empty or far smaller than the index (most documents "
    "orphaned: the wrong database, or a restore that lost rows): the headline, whatever else was found",
    ExitCode.STORE_BEHIND: None,
}
