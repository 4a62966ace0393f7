"""Views that enqueue Django tasks: ``add`` inside ``transaction.atomic()``,
and a third-party package's task from a POST."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from searchlib.tasks import index_object

from .tasks import add


class Refused(Exception):
    """Raised by the view after enqueueing, to roll the transaction back."""


def enqueue_add(request: HttpRequest) -> HttpResponse:
    """Enqueues ``add`` with ``?a=&b=``; ``&fail=1`` raises after the enqueue,
    inside the same atomic block, so the task is rolled back with it."""
    a, b = int(request.GET["a"]), int(request.GET["b"])
    try:
        with transaction.atomic():
            result = add.enqueue(a, b)
            if request.GET.get("fail"):
                raise Refused(result.id)
    except Refused as exc:
        return JsonResponse({"rolled_back": str(exc)}, status=409)
    return JsonResponse({"id": result.id, "status": str(result.status)})


@csrf_exempt
@require_POST
def enqueue_index(request: HttpRequest) -> HttpResponse:
    """Enqueues ``searchlib``'s ``index_object`` with ``pk=``, as a Wagtail
    page's publish enqueues ``modelsearch``'s tasks; on a threaded server each
    request runs in a thread of its own."""
    result = index_object.enqueue(int(request.POST["pk"]))
    return JsonResponse({"id": result.id})
