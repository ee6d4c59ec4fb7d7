"""What a preflight finds wrong: every problem at once, each naming its key and its fix."""
from dataclasses import dataclass
from typing import List, Sequence

__all__ = ["Problem", "PlanProblems"]


@dataclass(frozen=True)
class Problem:
    """One finding. ``key`` is the config path it is about (``train.dist``, ``model.cfg``, ...);
    ``severity`` is ``"error"`` (the run would fail or be wrong) or ``"warning"`` (the plan could
    not check something, or a setting is suspicious)."""

    key: str
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"[{self.severity}] {self.key}: {self.message}"


class PlanProblems(ValueError):
    """Raised by :func:`libai.plan.plan` when validation found errors; ``problems`` lists all of
    them (warnings included), and the message prints them one per line."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: List[Problem] = list(problems)
        errors = [p for p in self.problems if p.severity == "error"]
        lines = [f"preflight found {len(errors)} problem(s):"] + [f"  {p}" for p in self.problems]
        super().__init__("\n".join(lines))
