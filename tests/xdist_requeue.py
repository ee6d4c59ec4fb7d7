"""Work-around for a pytest-xdist 3.8 hang after a worker crash under ``--dist loadfile``.

When a worker dies, xdist's ``LoadScopeScheduling.remove_node`` puts *every* file the worker was
ever given back on the queue, the files it had finished included. A finished file handed to a
replacement worker is sent as an empty list of tests; the worker waits for more and the
controller waits for the worker, forever (pytest-xdist issues #1323 and #784; the fix,
pull request #1328, is in no release installable here). On our suite a OneFlow segfault in a
worker then stalled ``make test`` at 99 % until CI's time limit.

:func:`install` makes the crashed worker's finished files stay finished before xdist re-queues
the rest, so the replacement gets only tests that have not run. Called by tests/conftest.py in
the controller; a no-op without xdist.
"""
from typing import Any


def install() -> bool:
    """Patch the scheduler once; returns whether the patch is (now) in place."""
    try:
        from xdist.scheduler.loadscope import LoadScopeScheduling
    except ImportError:
        return False
    original = LoadScopeScheduling.remove_node
    if getattr(original, "libai_requeues_unfinished_only", False):
        return True

    def remove_node(self: Any, node: Any) -> Any:
        workload = self.assigned_work.get(node, {})
        for scope in [scope for scope, unit in workload.items() if all(unit.values())]:
            del workload[scope]  # every test of it ran: nothing to hand to a replacement
        return original(self, node)

    remove_node.libai_requeues_unfinished_only = True  # type: ignore[attr-defined]
    LoadScopeScheduling.remove_node = remove_node
    return True
