"""``Admin``'s actions on one job: retry, promote and cancel, each one SQL
function in a transaction of its own that says what it did.
"""

from __future__ import annotations

from ..core.limits import (
    shown,
)
from ..db import store
from ..db.snapshots import Checkpoint as Checkpoint  # (the names' old home)
from ..db.snapshots import JobDependency as JobDependency
from ..exceptions import InvalidQueryError
from .admin_base import AdminBase, check_by, check_job_id, check_reason
from .admin_results import ActionResult


class JobActions(AdminBase):
    """Actions on one job (part of ``Admin``)."""

    def retry(
        self, job_id: int, reason: str | None = None, *, ignore_dependencies: bool = False
    ) -> ActionResult:
        """Run a failed or canceled job again with a fresh attempt budget; its
        history stays and a 'retried' event is recorded.

        A job with prerequisites is judged again by its dependency policy
        against them as they are now: it waits (state 'blocked') for those
        still live, runs ('ready') when the policy is met already, and is
        refused (status 'unchanged', the message naming the prerequisite)
        when the policy can no longer be met, for instance all_succeeded with
        a failed prerequisite: retry that one first. ``ignore_dependencies``
        runs it now whatever its prerequisites are doing."""
        job_id = check_job_id(job_id)
        if not isinstance(ignore_dependencies, bool):
            raise InvalidQueryError(
                f"ignore_dependencies must be True or False, got {shown(ignore_dependencies, 40)}"
            )
        status, state, prerequisite, prerequisite_state = self._act(
            store.retry_job, job_id, check_reason(reason), ignore_dependencies
        )
        if status == "changed" and state == "blocked":
            message = (
                f"job #{job_id} will run again with a fresh attempt budget once its "
                "prerequisites still running end as its dependency policy needs (blocked)"
            )
        elif status == "changed":
            message = f"job #{job_id} is ready to run again with a fresh attempt budget"
        elif status == "unchanged" and prerequisite is not None:
            message = (
                f"job #{job_id} stays {state}: its dependency policy can no longer be met, "
                f"as its prerequisite job #{prerequisite} ended {prerequisite_state}; retry job "
                f"#{prerequisite} first (the dependent then waits for it), or retry it "
                "ignoring its dependencies to run it regardless (ignore_dependencies=True; "
                "in the admin, the job page's 'Retry ignoring prerequisites' button)"
            )
        elif status == "unchanged":
            message = f"job #{job_id} is {state}: only failed or canceled jobs can be retried"
        else:
            message = f"there is no job #{job_id}"
        return ActionResult("retry", job_id, status, state, message)

    def promote(self, job_id: int) -> ActionResult:
        """Make a scheduled job ready now."""
        job_id = check_job_id(job_id)
        status, state = self._act(store.promote_job, job_id)
        messages = {
            "changed": f"job #{job_id} is ready to run now",
            "unchanged": f"job #{job_id} is {state}: only scheduled jobs can be promoted",
            "unknown": f"there is no job #{job_id}",
        }
        return ActionResult("promote", job_id, status, state, messages[status])

    def cancel(
        self, job_id: int, reason: str | None = None, *, by: str | None = None
    ) -> ActionResult:
        """Cancel a job; ``by`` names who asked (the Django admin passes the
        user's username), ``reason`` says why.

        A blocked, scheduled or ready job ends 'canceled' at once (status
        'changed'). A running job is flagged and its worker told (status
        'requested', state 'active'): the worker stops the handler and acks
        the job 'canceled', within moments through a notification or within
        one heartbeat interval without one. A handler that finishes before
        its worker hears of the cancel keeps its result. A job already
        finished is left as it is (status 'unchanged', state saying how it
        ended).

        The envelope of a job canceled at once holds ``reason``, ``by`` and
        ``at`` (the database's time of the cancel); for a running job they
        are kept in its ``cancel_requested`` event.
        """
        job_id = check_job_id(job_id)
        status, state = self._act(store.cancel_job, job_id, check_reason(reason), check_by(by))
        messages = {
            "changed": f"job #{job_id} is canceled",
            "requested": (
                f"job #{job_id} is running: its worker was asked to stop it, and it ends "
                "canceled once the worker acks (a handler that finishes first keeps its result)"
            ),
            "unchanged": f"job #{job_id} had already finished ({state}): nothing to cancel",
            "unknown": f"there is no job #{job_id}",
        }
        return ActionResult("cancel", job_id, status, state, messages[status])
