"""The Django admin over jobs: read-only; operator actions go through ``Admin``."""

from django.contrib import admin

from .models import AttemptHistory, Job, JobEvent, Queue


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows are written by the SQL functions only."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("id", "name", "queue", "priority", "max_attempts", "created_at")
    list_filter = ("queue",)
    search_fields = ("=id", "name")
    show_full_result_count = False  # no COUNT(*) over a big table


@admin.register(JobEvent)
class JobEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "job_id", "at", "kind", "attempt", "worker_id")
    search_fields = ("=job_id",)
    show_full_result_count = False


@admin.register(AttemptHistory)
class AttemptHistoryAdmin(ReadOnlyAdmin):
    list_display = ("id", "job_id", "attempt", "outcome", "worker_id", "started_at", "finished_at")
    search_fields = ("=job_id",)
    show_full_result_count = False


@admin.register(Queue)
class QueueAdmin(ReadOnlyAdmin):
    list_display = ("name", "paused", "updated_at")
