"""What an undo of a repair did (data only: reports render it, rebuild/undo.py makes it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.exit_codes import ExitCode


@dataclass
class Taken:
    """One document (or alias) the undo put back, left alone or refused."""

    index: str
    doc_id: str
    urn: str
    action: str  # put back | deleted | already as before | refused
    why: str = ""


@dataclass
class UndoOutcome:
    run: str
    applied: bool
    journal: str  # the journal file read
    undo_run: str | None = None  # the undo's own journal (an undo is undoable)
    torn: str | None = None  # the journal stopped being readable here (a killed repair)
    ended: bool = True  # the repair closed its journal (False: it was killed, or still runs)
    restored: list[Taken] = field(default_factory=list)
    unchanged: list[Taken] = field(default_factory=list)
    refused: list[Taken] = field(default_factory=list)
    aliases: list[Taken] = field(default_factory=list)  # a full rebuild's swaps taken back (or not)
    failed: list[Taken] = field(default_factory=list)  # a write of the undo that failed

    @property
    def exit_code(self) -> ExitCode:
        """0: everything put back (or already as before); UNDO_PARTIAL: some documents refused
        (written since by someone else) or failed; they are listed."""
        refused = self.refused or self.failed or any(a.action == "refused" for a in self.aliases)
        return ExitCode.UNDO_PARTIAL if refused else ExitCode.OK
