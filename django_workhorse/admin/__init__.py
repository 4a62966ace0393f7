"""The Django admin over jobs (Django's admin autodiscovery imports this).

Three pages under the app's section, each built on ``Admin`` and nothing
else: the job list (``job_list.py``), the job page with its timeline
(``job_page.py``) and the queue dashboard (``queues.py``); beside them the
failures page (``failures_page.py``), the filter-wide actions
(``job_matching.py``, ``actions.py``) and what every page shares
(``base.py``). ``job_admin.py`` puts the job pages together as ``JobAdmin``.
See docs/ARCHITECTURE.md.
"""

from .base import OperatorAdmin
from .job_admin import JobAdmin
from .queues import QueueAdmin

__all__ = ["JobAdmin", "OperatorAdmin", "QueueAdmin"]
