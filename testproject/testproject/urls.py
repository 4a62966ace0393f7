from django.contrib import admin
from django.urls import path
from jobtests.views import enqueue_add, enqueue_index

urlpatterns = [
    path("admin/", admin.site.urls),
    path("jobtests/enqueue-add", enqueue_add),
    path("jobtests/enqueue-index", enqueue_index),
]
