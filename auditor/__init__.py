"""auditor: keeps DataHub's search indices and change-log consumers honest against the aspect table."""

from __future__ import annotations

__version__ = "0.1.0"
