"""The evidence file of a repair after a restore, as JSON and as Markdown (to attach to a ticket)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from auditor.core.plan import RestoreEvidence
from auditor.reports.escape import md_code, md_text
from auditor.reports.json_report import plain


def to_json(evidence: RestoreEvidence) -> str:
    data: dict[str, Any] = plain(asdict(evidence))
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def to_markdown(evidence: RestoreEvidence) -> str:
    e = evidence
    lines = [f"# Repair after a restore, {e.started_at.isoformat(timespec='seconds')}", ""]
    lines += [f"- {md_text(k)}: {md_code(v)}" for k, v in sorted(e.sources.items())]
    lines += [
        "",
        "## What was behind",
        "",
        f"- the table's newest write: {e.table_last_write.isoformat() if e.table_last_write else '-'}",
        "- the system-metadata index's newest update: "
        + (e.system_metadata_last_update.isoformat() if e.system_metadata_last_update else "-"),
    ]
    lines += [f"- {md_code(index)}: {n} entities behind the restore" for index, n in sorted(e.behind.items())]
    window = e.since.isoformat() if e.since else "nothing behind: no window"
    lines += ["", "## The window", "", f"rows written since {window}", ""]
    if e.outcome is not None:
        done = ", ".join(f"{k} {v}" for k, v in sorted(e.outcome.counts.items())) or "nothing"
        state = "applied" if e.outcome.applied else "planned only (dry run)"
        lines += ["## What was done", "", f"- {e.mode}, {state}: {md_text(done)}"]
        lines += [f"- {e.outcome.rows} version-0 rows in the window"] if e.outcome.rows is not None else []
        lines += [f"- still wrong after verification: {len(e.outcome.still_wrong)}", ""]
    lines += ["## Final audit", ""]
    if e.final_exit_code is None:
        lines.append("not run (dry run)")
    else:
        found = ", ".join(f"{md_text(k)}: {v}" for k, v in sorted(e.final_counts.items())) or "no findings"
        lines.append(f"exit code {e.final_exit_code}: {found}")
    finished = e.finished_at.isoformat(timespec="seconds") if e.finished_at else "-"
    lines += ["", f"Finished {finished}."]
    return "\n".join(lines) + "\n"
