"""The results: one row per check, printed as it is made, and the comparisons that make them."""
from typing import Any, Dict, List

from tools.checkpoint_check.setup import RESUME_FROM


class Report:
    def __init__(self) -> None:
        self.rows: List[Dict[str, Any]] = []

    def add(self, check: str, ok: bool, value: str, note: str = "") -> None:
        self.rows.append({"check": check, "ok": bool(ok), "value": value, "note": note})
        print(f"{'ok  ' if ok else 'FAIL'} {check}: {value} {note}".rstrip(), flush=True)

    @property
    def ok(self) -> bool:
        return all(r["ok"] for r in self.rows)


def compare_logits(report: Report, name: str, ours: Any, theirs: Any, tol: float) -> None:
    import numpy as np

    if ours.shape != theirs.shape:
        report.add(name, False, f"shapes {ours.shape} vs {theirs.shape}")
        return
    diff = float(np.abs(ours - theirs).max())
    report.add(name, diff <= tol, f"max |diff| {diff:.2e}", f"(tol {tol:g})")


def compare_resume(report: Report, name: str, resumed: Dict[int, Dict[str, float]],
                   reference: Dict[int, Dict[str, float]]) -> None:
    expected = sorted(i for i in reference if i > int(RESUME_FROM.split("_")[1]))
    ran = sorted(resumed)
    report.add(f"{name}: iterations run", ran == expected, f"{ran}", f"(expected {expected})")
    worst = max(abs(resumed[i]["lr"] - reference[i]["lr"]) / abs(reference[i]["lr"])
                for i in expected if i in resumed) if set(expected) <= set(ran) else float("inf")
    lrs = ", ".join(f"{resumed[i]['lr']:.4e}" for i in ran)
    report.add(f"{name}: learning rates", worst <= 1e-12, lrs, f"(max rel. diff {worst:.1e})")
    losses = [abs(resumed[i]["loss"] - reference[i]["loss"]) for i in expected if i in resumed]
    if losses:
        print(f"     {name}: loss |diff| per iteration (information): "
              + ", ".join(f"{d:.2e}" for d in losses), flush=True)



def compare_outputs(report: Report, name: str, ours_out: Any, theirs_out: Any,
                    inputs: Dict[str, Any], tol: float) -> None:
    """:func:`compare_logits` of one model output. Per-token outputs at padding positions mean
    nothing (LiBai also masks the padded queries, libai only the keys): with an attention mask
    among the inputs, only the real tokens are compared."""
    if "attention_mask" in inputs and ours_out.ndim == 3:
        real = inputs["attention_mask"]
        ours_out, theirs_out = ours_out[real], theirs_out[real]
    compare_logits(report, name, ours_out, theirs_out, tol)
