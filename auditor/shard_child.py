"""One shard of `auditor.api.rebuild_in_shards`, as a child process of it.

    python -m auditor.shard_child OUTCOME.json   (its settings and request pickled on stdin)

Its parent gives it the settings and the shard's request on standard input (nothing on a command
line or on disk: the settings hold credentials), it repairs its shard with `auditor.api.rebuild`
and writes the outcome as JSON to OUTCOME.json. Exit code: the outcome's, or an error's (its
`error:` line on stderr is what the merged outcome says of a shard that wrote none)."""

from __future__ import annotations

import logging
import pickle
import sys
import traceback
from pathlib import Path


def main(argv: list[str]) -> int:
    from auditor.api import rebuild
    from auditor.errors import AuditorError
    from auditor.exit_codes import ExitCode
    from auditor.reports.escape import visible
    from auditor.reports.rebuild_report import to_json

    logging.basicConfig(level=logging.CRITICAL)  # nothing but the tool's own lines in the log
    logging.getLogger("auditor.kafka").setLevel(logging.CRITICAL + 1)
    if len(argv) != 2:
        print(
            "usage: python -m auditor.shard_child OUTCOME.json (settings and request on stdin)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    settings, request = pickle.load(sys.stdin.buffer)
    try:
        outcome = rebuild(settings, request)
    except AuditorError as exc:
        print(f"error: {visible(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a crash: its traceback for the log, one error line for the merge
        for line in traceback.format_exc().splitlines():
            print(visible(line), file=sys.stderr)
        print(f"error: {visible(f'{type(exc).__name__}: {exc}')}", file=sys.stderr)
        return ExitCode.INCOMPLETE
    Path(argv[1]).write_text(to_json(outcome) + "\n", encoding="utf-8")
    return outcome.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
