"""A view that enqueues a Django task inside ``transaction.atomic()``."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse, JsonResponse

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
